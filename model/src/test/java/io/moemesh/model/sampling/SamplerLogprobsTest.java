package io.moemesh.model.sampling;

import static io.moemesh.model.sampling.SamplerTest.randomLogits;
import static io.moemesh.model.sampling.SamplerTest.seeded;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.moemesh.model.sampling.SampledToken.TokenLogprob;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class SamplerLogprobsTest {

  static SampledToken.Logprobs logprobs(SamplingParams p, float[] logits, TokenCounts history) {
    return new Sampler(p, logits.length).sample(logits, history).logprobs().orElseThrow();
  }

  @Nested
  class Presence {
    @Test
    void absentUnlessRequested() {
      assertThat(new Sampler(seeded(1).build(), 3).sample(new float[3], new TokenCounts()).logprobs()).isEmpty();
    }

    @Test
    void zeroGivesTheChosenTokenOnly() {
      SampledToken.Logprobs lp = logprobs(seeded(1).logprobs(0).build(), new float[] {0f, 0f}, new TokenCounts());
      assertThat(lp.logprob()).isCloseTo(Math.log(0.5), within(1e-12));
      assertThat(lp.top()).isEmpty();
    }
  }

  @Nested
  class Values {
    @Test
    void sumToOneInProbabilitySpace() {
      float[] logits = randomLogits(20, 6);
      SampledToken.Logprobs lp = logprobs(seeded(2).logprobs(20).build(), logits, new TokenCounts());
      double mass = lp.top().stream().mapToDouble(t -> Math.exp(t.logprob())).sum();
      assertThat(mass).isCloseTo(1.0, within(1e-7));
      assertThat(lp.top()).extracting(TokenLogprob::tokenId).doesNotHaveDuplicates().hasSize(20);
    }

    @Test
    void matchTheLogSoftmaxOfTheRawLogits() {
      float[] logits = randomLogits(1000, 7);
      double[] expected = NaiveSampling.logSoftmax(logits);
      SampledToken token = new Sampler(seeded(3).logprobs(5).build(), 1000).sample(logits, new TokenCounts());
      SampledToken.Logprobs lp = token.logprobs().orElseThrow();
      assertThat(lp.logprob()).isCloseTo(expected[token.tokenId()], within(1e-7));
      for (TokenLogprob t : lp.top()) {
        assertThat(t.logprob()).isCloseTo(expected[t.tokenId()], within(1e-7));
      }
    }

    @Test
    void areTakenBeforePenaltiesTemperatureAndFilters() {
      float[] logits = {3f, 1.5f, 0.5f};
      TokenCounts history = new TokenCounts();
      history.addGenerated(0);
      SamplingParams p = SamplingParams.greedy().toBuilder().presencePenalty(2.0).logprobs(3).build();
      SampledToken token = new Sampler(p, 3).sample(logits, history);
      double[] raw = NaiveSampling.logSoftmax(logits);
      assertThat(token.tokenId()).isEqualTo(1); // token 0 is penalized to 3 - 2 = 1 < 1.5
      assertThat(token.logprobs().orElseThrow().logprob()).isCloseTo(raw[1], within(1e-7));
      assertThat(token.logprobs().orElseThrow().top().getFirst())
          .isEqualTo(new TokenLogprob(0, raw[0]));
    }

    @Test
    void negativeInfinityLogitsHaveNegativeInfinityLogprobs() {
      float[] logits = {0f, Float.NEGATIVE_INFINITY};
      SampledToken.Logprobs lp = logprobs(seeded(1).logprobs(2).build(), logits, new TokenCounts());
      assertThat(lp.logprob()).isZero();
      assertThat(lp.top()).containsExactly(new TokenLogprob(0, 0.0),
          new TokenLogprob(1, Double.NEGATIVE_INFINITY));
    }
  }

  @Nested
  class TopOrder {
    @Test
    void isDescendingWithTiesByAscendingId() {
      float[] logits = {1f, 5f, 3f, 5f, 3f, 0f, 3f};
      List<TokenLogprob> top = logprobs(seeded(1).logprobs(5).build(), logits, new TokenCounts()).top();
      assertThat(top).extracting(TokenLogprob::tokenId).containsExactly(1, 3, 2, 4, 6);
    }

    @Test
    void isTheNLargestOfALargeVocabulary() {
      float[] logits = randomLogits(129_280, 12);
      List<TokenLogprob> top = logprobs(seeded(1).logprobs(20).build(), logits, new TokenCounts()).top();
      double[] all = NaiveSampling.logSoftmax(logits);
      double[] sorted = all.clone();
      java.util.Arrays.sort(sorted);
      double twentieth = sorted[sorted.length - 20];
      assertThat(top).hasSize(20).isSortedAccordingTo(Comparator.comparingDouble(TokenLogprob::logprob).reversed());
      assertThat(top.getLast().logprob()).isCloseTo(twentieth, within(1e-7));
    }
  }
}
