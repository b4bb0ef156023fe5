package io.moemesh.model.sampling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

/**
 * Speculative decoding's verification keeps the target distribution exact: drafts drawn from q, verified against
 * p by {@link Sampler#verify}, give tokens distributed as p (Pearson's chi-square at the 0.999 quantile, fixed seeds),
 * and accept with probability Σ min(p, q).
 */
class SpeculativeSamplingTest {
  static final int N = 100_000;
  static final float[] TARGET = {1.0f, 0.5f, 0f, -0.5f, 2.0f, -1.0f};
  static final float[] DRAFT = {0.2f, 1.5f, 0.3f, 1.0f, 0.1f, -2.0f}; // far from the target: many rejections

  /** Counts the emitted tokens of N verifications of drafts from {@code drafter} against {@code target}; returns acceptances. */
  static long verifyMany(Sampler target, Sampler drafter, float[] targetLogits, float[] draftLogits, long[] observed) {
    long accepted = 0;
    for (int i = 0; i < N; i++) {
      Sampler.Draft d = drafter.draft(draftLogits, new TokenCounts());
      Sampler.Verdict v = target.verify(targetLogits, new TokenCounts(), d);
      if (v.accepted()) {
        accepted++;
        assertThat(v.token().tokenId()).isEqualTo(d.tokenId());
      }
      observed[v.token().tokenId()]++;
    }
    return accepted;
  }

  static double chiSquare(long[] observed, double[] expected) {
    double chi = 0;
    for (int t = 0; t < observed.length; t++) {
      if (expected[t] == 0) {
        assertThat(observed[t]).as("token %d has probability 0", t).isZero();
        continue;
      }
      double e = N * expected[t];
      chi += (observed[t] - e) * (observed[t] - e) / e;
    }
    return chi;
  }

  static double overlap(double[] p, double[] q) {
    double s = 0;
    for (int i = 0; i < p.length; i++) s += Math.min(p[i], q[i]);
    return s;
  }

  @Test
  void sampledDraftsVerifiedBySamplingGiveTheTargetDistribution() {
    var params = SamplingParams.builder().seed(7L).build();
    Sampler target = new Sampler(params, 6), drafter = new Sampler(params.toBuilder().seed(8L).build(), 6);
    double[] p = target.probabilities(TARGET, new TokenCounts()), q = drafter.probabilities(DRAFT, new TokenCounts());
    long[] observed = new long[6];
    long accepted = verifyMany(target, drafter, TARGET, DRAFT, observed);
    assertThat(chiSquare(observed, p)).isLessThan(20.52); // 5 degrees of freedom
    assertThat((double) accepted / N).isCloseTo(overlap(p, q), within(0.01));
  }

  @Test
  void filteredTargetAndDraftKeepTheTargetsFilteredDistribution() {
    var params = SamplingParams.builder().seed(11L).temperature(0.7).topK(3).build();
    Sampler target = new Sampler(params, 6), drafter = new Sampler(params.toBuilder().seed(12L).topK(4).build(), 6);
    double[] p = target.probabilities(TARGET, new TokenCounts());
    long[] observed = new long[6];
    verifyMany(target, drafter, TARGET, DRAFT, observed);
    assertThat(chiSquare(observed, p)).isLessThan(13.82); // 3 tokens kept: 2 degrees of freedom
  }

  @Test
  void aGreedyDraftIsAOneHotQ() {
    Sampler target = new Sampler(SamplingParams.builder().seed(3L).build(), 6);
    double[] p = target.probabilities(TARGET, new TokenCounts());
    long[] observed = new long[6];
    long accepted = 0;
    var draft = new Sampler.Draft(1, null, 1); // q = δ₁
    for (int i = 0; i < N; i++) {
      Sampler.Verdict v = target.verify(TARGET, new TokenCounts(), draft);
      if (v.accepted()) accepted++;
      observed[v.token().tokenId()]++;
    }
    assertThat(chiSquare(observed, p)).isLessThan(20.52);
    assertThat((double) accepted / N).isCloseTo(p[1], within(0.01));
  }

  @Test
  void identicalDistributionsAlwaysAccept() {
    var params = SamplingParams.builder().seed(5L).build();
    Sampler target = new Sampler(params, 6), drafter = new Sampler(params.toBuilder().seed(6L).build(), 6);
    long[] observed = new long[6];
    assertThat(verifyMany(target, drafter, TARGET, TARGET, observed)).isEqualTo(N);
  }

  @Test
  void greedyVerificationAcceptsTheArgmaxOnlyAndDrawsNothing() {
    var params = SamplingParams.greedy().toBuilder().seed(1L).build();
    Sampler target = new Sampler(params, 6);
    Sampler.Verdict hit = target.verify(TARGET, new TokenCounts(), new Sampler.Draft(4, null, 1));
    Sampler.Verdict miss = target.verify(TARGET, new TokenCounts(), new Sampler.Draft(2, new float[] {0, 0, 1, 0, 0, 0}, 1));
    assertThat(hit.accepted()).isTrue();
    assertThat(hit.token().tokenId()).isEqualTo(4);
    assertThat(miss.accepted()).isFalse();
    assertThat(miss.token().tokenId()).isEqualTo(4);
  }

  @Test
  void penaltiesSeeTheHistoryGiven() {
    var params = SamplingParams.greedy().toBuilder().presencePenalty(2).build();
    Sampler target = new Sampler(params, 6);
    TokenCounts history = new TokenCounts();
    history.addGenerated(4);
    assertThat(target.verify(TARGET, history, new Sampler.Draft(0, null, 1)).accepted()).as("4 is penalized: 0 is the choice").isTrue();
    TokenCounts copy = history.copy();
    copy.addGenerated(0);
    assertThat(history.generatedCount(0)).isZero();
    assertThat(copy.generatedCount(4)).isEqualTo(1);
  }
}
