package io.moemesh.model.sampling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class SamplerTest {
  static final float NEG_INF = Float.NEGATIVE_INFINITY;

  static float[] randomLogits(int vocab, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    float[] logits = new float[vocab];
    for (int i = 0; i < vocab; i++) {
      logits[i] = (float) (3 * random.nextGaussian());
    }
    return logits;
  }

  static int[] draw(Sampler sampler, float[] logits, int n) {
    int[] tokens = new int[n];
    for (int i = 0; i < n; i++) {
      tokens[i] = sampler.sample(logits, new TokenCounts()).tokenId();
    }
    return tokens;
  }

  static SamplingParams.Builder seeded(long seed) {
    return SamplingParams.builder().seed(seed);
  }

  @Nested
  class Greedy {
    @Test
    void picksTheArgmax() {
      Sampler sampler = new Sampler(SamplingParams.greedy(), 5);
      assertThat(sampler.sample(new float[] {0.1f, 3f, -2f, 2.9f, NEG_INF}, new TokenCounts()).tokenId())
          .isEqualTo(1);
    }

    @Test
    void breaksTiesTowardTheLowestId() {
      Sampler sampler = new Sampler(SamplingParams.greedy(), 4);
      assertThat(sampler.sample(new float[] {1f, 7f, 7f, 7f}, new TokenCounts()).tokenId()).isEqualTo(1);
      assertThat(sampler.sample(new float[] {2f, 2f, 2f, 2f}, new TokenCounts()).tokenId()).isZero();
    }

    @Test
    void seesTheBiasedLogitsAndLeavesTheArgmaxShortcut() {
      SamplingParams p = SamplingParams.greedy().toBuilder().logitBias(Map.of(2, 5f, 1, -100f)).build();
      Sampler sampler = new Sampler(p, 3);
      assertThat(sampler.takesArgmax()).isFalse();
      assertThat(sampler.sample(new float[] {1f, 4f, -0.5f}, new TokenCounts()).tokenId()).isEqualTo(2);
      Sampler banned = new Sampler(SamplingParams.greedy().toBuilder().logitBias(Map.of(1, -100f)).build(), 3);
      assertThat(banned.sample(new float[] {1f, 4f, -0.5f}, new TokenCounts()).tokenId()).isZero();
    }

    @Test
    void biasComesBeforeThePenalties() {
      // bias 2 lifts token 0 to 3.5; the presence penalty 1 then takes it to 2.5, above token 1's 2.4
      SamplingParams p = SamplingParams.greedy().toBuilder().logitBias(Map.of(0, 2f)).presencePenalty(1.0).build();
      TokenCounts history = new TokenCounts();
      history.addGenerated(0);
      assertThat(new Sampler(p, 2).sample(new float[] {1.5f, 2.4f}, history).tokenId()).isZero();
    }

    @Test
    void seesThePenalizedLogits() {
      SamplingParams p = SamplingParams.greedy().toBuilder().presencePenalty(1.0).build();
      TokenCounts history = new TokenCounts();
      history.addGenerated(0);
      assertThat(new Sampler(p, 2).sample(new float[] {1.5f, 1f}, history).tokenId()).isEqualTo(1);
    }

    @Test
    void aTinyTemperatureConcentratesOnTheArgmaxWithoutNaN() {
      Sampler sampler = new Sampler(seeded(1).temperature(1e-6).build(), 3);
      double[] p = sampler.probabilities(new float[] {1f, 1.001f, -5f}, new TokenCounts());
      assertThat(p).containsExactly(0, 1, 0);
    }
  }

  @Nested
  class Seeding {
    @Test
    void theSameSeedGivesTheSameSequence() {
      float[] logits = randomLogits(1000, 3);
      SamplingParams p = seeded(1234).temperature(0.8).topP(0.95).build();
      assertThat(draw(new Sampler(p, 1000), logits, 300)).containsExactly(draw(new Sampler(p, 1000), logits, 300));
    }

    @Test
    void differentSeedsGiveDifferentSequences() {
      float[] logits = new float[100]; // uniform: 100 choices per step
      int[] a = draw(new Sampler(seeded(1).build(), 100), logits, 50);
      int[] b = draw(new Sampler(seeded(2).build(), 100), logits, 50);
      assertThat(a).isNotEqualTo(b);
    }

    @Test
    void aRequestsTokensDoNotDependOnItsBatchNeighbours() {
      float[] logits = randomLogits(500, 9);
      int[] alone = draw(new Sampler(seeded(77).build(), 500), logits, 100);
      Sampler mine = new Sampler(seeded(77).build(), 500);
      Sampler neighbour = new Sampler(seeded(78).temperature(1.7).build(), 500);
      Sampler greedyNeighbour = new Sampler(SamplingParams.greedy(), 500);
      int[] batched = new int[100];
      for (int i = 0; i < 100; i++) {
        neighbour.sample(logits, new TokenCounts());
        batched[i] = mine.sample(logits, new TokenCounts()).tokenId();
        greedyNeighbour.sample(logits, new TokenCounts());
      }
      assertThat(batched).containsExactly(alone);
    }

    @Test
    void greedyIgnoresTheSeed() {
      float[] logits = randomLogits(300, 5);
      int[] a = draw(new Sampler(SamplingParams.greedy().toBuilder().seed(1L).build(), 300), logits, 20);
      int[] b = draw(new Sampler(SamplingParams.greedy(), 300), logits, 20);
      assertThat(a).containsExactly(b).containsOnly(a[0]);
    }
  }

  @Nested
  class Distribution {
    /** Pearson's chi-square at 4 degrees of freedom; 18.47 is the 0.999 quantile. Deterministic seed. */
    @Test
    void matchesSoftmaxAtTemperatureOne() {
      float[] logits = {1.0f, 0.5f, 0f, -0.5f, 2.0f, NEG_INF};
      assertChiSquareFits(seeded(2024).build(), logits, 1.0);
    }

    @Test
    void matchesSoftmaxOfTheBiasedLogits() {
      float[] logits = {1.0f, 0.5f, 0f, -0.5f, 2.0f, NEG_INF};
      float[] biased = {1.0f, 2.5f, 0f, -0.5f, -1.0f, NEG_INF};
      assertChiSquareFits(seeded(7).logitBias(Map.of(1, 2f, 4, -3f, 5, 100f)).build(), logits, biased, 1.0);
    }

    @Test
    void matchesSoftmaxOfScaledLogitsAtTemperatureHalf() {
      float[] logits = {1.0f, 0.5f, 0f, -0.5f, 2.0f, NEG_INF};
      assertChiSquareFits(seeded(99).temperature(0.5).build(), logits, 0.5);
    }

    private void assertChiSquareFits(SamplingParams params, float[] logits, double temperature) {
      assertChiSquareFits(params, logits, logits, temperature);
    }

    /** Samples {@code logits} with {@code params}; the draws must follow the softmax of {@code effective}. */
    private void assertChiSquareFits(SamplingParams params, float[] logits, float[] effective, double temperature) {
      int n = 100_000;
      long[] observed = new long[logits.length];
      Sampler sampler = new Sampler(params, logits.length);
      for (int i = 0; i < n; i++) {
        observed[sampler.sample(logits, new TokenCounts()).tokenId()]++;
      }
      double[] expected = softmax(effective, temperature);
      double chiSquare = 0;
      for (int t = 0; t < logits.length; t++) {
        if (expected[t] == 0) {
          assertThat(observed[t]).as("token %d has probability 0", t).isZero();
        } else {
          double e = n * expected[t];
          chiSquare += (observed[t] - e) * (observed[t] - e) / e;
        }
      }
      assertThat(chiSquare).isLessThan(18.47);
      assertThat(sampler.probabilities(logits, new TokenCounts())).containsExactly(expected, within(1e-7));
    }

    private double[] softmax(float[] logits, double temperature) {
      double max = Double.NEGATIVE_INFINITY;
      for (float l : logits) {
        max = Math.max(max, l);
      }
      double[] p = new double[logits.length];
      double sum = 0;
      for (int t = 0; t < logits.length; t++) {
        p[t] = Math.exp((logits[t] - max) / temperature);
        sum += p[t];
      }
      for (int t = 0; t < logits.length; t++) {
        p[t] /= sum;
      }
      return p;
    }
  }

  @Nested
  class EdgeCases {
    @Test
    void neverWritesTheCallersLogits() {
      float[] logits = randomLogits(2000, 11);
      float[] copy = logits.clone();
      TokenCounts history = TokenCounts.ofPrompt(1, 2, 3);
      history.addGenerated(4);
      SamplingParams p = seeded(1).temperature(0.7).topK(50).topP(0.9).minP(0.01)
          .repetitionPenalty(1.3).presencePenalty(0.4).frequencyPenalty(0.2).logprobs(5).build();
      new Sampler(p, 2000).sample(logits, history);
      new Sampler(p.toBuilder().temperature(0).build(), 2000).sample(logits, history);
      assertThat(logits).containsExactly(copy);
    }

    @Test
    void negativeInfinityTokensAreNeverSampled() {
      float[] logits = {NEG_INF, 0f, NEG_INF, 0f};
      int[] tokens = draw(new Sampler(seeded(5).temperature(2).build(), 4), logits, 10_000);
      assertThat(tokens).containsOnly(1, 3);
    }

    @Test
    void allEqualLogitsAreUniform() {
      double[] p = new Sampler(seeded(1).build(), 7).probabilities(new float[7], new TokenCounts());
      double[] uniform = new double[7];
      Arrays.fill(uniform, 1.0 / 7);
      assertThat(p).containsExactly(uniform, within(1e-12));
    }

    @Test
    void aVocabularyOfOneAlwaysYieldsThatToken() {
      SamplingParams p = seeded(1).topK(1).topP(0.5).minP(1).logprobs(3).build();
      SampledToken token = new Sampler(p, 1).sample(new float[] {-42f}, new TokenCounts());
      assertThat(token.tokenId()).isZero();
      assertThat(token.logprobs().orElseThrow().logprob()).isZero();
      assertThat(token.logprobs().orElseThrow().top()).hasSize(1);
    }

    @Test
    void rejectsBrokenRows() {
      Sampler sampler = new Sampler(seeded(1).build(), 3);
      TokenCounts none = new TokenCounts();
      assertThatThrownBy(() -> sampler.sample(new float[] {0f, Float.NaN, 1f}, none))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("logits[1] is NaN");
      assertThatThrownBy(() -> sampler.sample(new float[] {Float.POSITIVE_INFINITY, 0f, 0f}, none))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("+Infinity");
      assertThatThrownBy(() -> sampler.sample(new float[] {NEG_INF, NEG_INF, NEG_INF}, none))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-Infinity");
      assertThatThrownBy(() -> sampler.sample(new float[4], none))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("vocabulary size 3");
    }

    @Test
    void rejectsAHistoryIdOutsideTheVocabulary() {
      Sampler sampler = new Sampler(seeded(1).repetitionPenalty(1.2).build(), 3);
      assertThatThrownBy(() -> sampler.sample(new float[3], TokenCounts.ofPrompt(3)))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("history token id 3");
    }

    @Test
    void handlesTheFullDeepSeekVocabulary() {
      int vocab = 129_280;
      float[] logits = randomLogits(vocab, 21);
      Arrays.fill(logits, 0, 1000, NEG_INF);
      SamplingParams p = seeded(3).temperature(0.6).topK(100).topP(0.9).minP(0.02).logprobs(20).build();
      Sampler sampler = new Sampler(p, vocab);
      double[] expected = NaiveSampling.distribution(logits, new TokenCounts(), p);
      assertThat(sampler.probabilities(logits, new TokenCounts())).containsExactly(expected, within(1e-6));
      for (int i = 0; i < 50; i++) {
        assertThat(expected[sampler.sample(logits, new TokenCounts()).tokenId()]).isPositive();
      }
    }
  }
}
