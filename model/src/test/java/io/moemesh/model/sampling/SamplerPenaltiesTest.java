package io.moemesh.model.sampling;

import static io.moemesh.model.sampling.SamplerTest.seeded;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class SamplerPenaltiesTest {
  /** Token 0 prompt only; 1 generated 3 times; 2 in the prompt and generated once; 3 and 4 never seen. */
  static TokenCounts history() {
    TokenCounts history = TokenCounts.ofPrompt(0, 2, 0);
    history.addGenerated(1);
    history.addGenerated(2);
    history.addGenerated(1);
    history.addGenerated(1);
    return history;
  }

  static float[] penalized(SamplingParams p, float[] logits) {
    float[] row = logits.clone();
    Sampler.applyPenalties(row, history(), p);
    return row;
  }

  @Nested
  class Formula {
    @Test
    void repetitionDividesPositiveAndMultipliesNegativeLogitsOfEverySeenToken() {
      SamplingParams p = seeded(1).repetitionPenalty(2.0).build();
      assertThat(penalized(p, new float[] {4f, -3f, 0f, 5f, -5f}))
          .containsExactly(2f, -6f, 0f, 5f, -5f);
    }

    @Test
    void frequencySubtractsPerGeneratedOccurrenceAndSkipsPromptOnlyTokens() {
      SamplingParams p = seeded(1).frequencyPenalty(0.5).build();
      assertThat(penalized(p, new float[] {1f, 1f, 1f, 1f, 1f}))
          .containsExactly(1f, 1f - 3 * 0.5f, 1f - 0.5f, 1f, 1f);
    }

    @Test
    void presenceSubtractsOnceForEveryGeneratedToken() {
      SamplingParams p = seeded(1).presencePenalty(-1.5).build();
      assertThat(penalized(p, new float[] {1f, 1f, 1f, 1f, 1f}))
          .containsExactly(1f, 2.5f, 2.5f, 1f, 1f);
    }

    @Test
    void allThreeComposeInVllmOrder() {
      SamplingParams p = seeded(1).repetitionPenalty(1.25).frequencyPenalty(0.2).presencePenalty(0.3).build();
      float[] out = penalized(p, new float[] {2.5f, 2.5f, -2f, 7f, -1f});
      assertThat(out[0]).isEqualTo((float) (2.5 / 1.25));
      assertThat(out[1]).isEqualTo((float) (2.5 / 1.25 - 0.2 * 3 - 0.3));
      assertThat(out[2]).isEqualTo((float) (-2 * 1.25 - 0.2 * 1 - 0.3));
      assertThat(new float[] {out[3], out[4]}).containsExactly(7f, -1f);
    }

    @Test
    void negativeInfinityStaysMaskedAndOverflowSaturates() {
      SamplingParams p = seeded(1).repetitionPenalty(1e-3).frequencyPenalty(-2).build();
      float[] out = penalized(p, new float[] {Float.NEGATIVE_INFINITY, Float.MAX_VALUE, 1f, 0f, 0f});
      assertThat(out[0]).isEqualTo(Float.NEGATIVE_INFINITY);
      assertThat(out[1]).isEqualTo(Float.MAX_VALUE);
    }
  }

  @Nested
  class InTheSampler {
    @Test
    void theDistributionUsesThePenalizedLogits() {
      SamplingParams p = seeded(1).temperature(0.7).repetitionPenalty(1.3).frequencyPenalty(0.4)
          .presencePenalty(0.6).build();
      float[] logits = {2f, 1.5f, 0.5f, 1f, -0.5f};
      double[] expected = new double[5];
      float[] z = penalized(p, logits);
      double sum = 0;
      for (int t = 0; t < 5; t++) {
        expected[t] = Math.exp(z[t] / 0.7);
        sum += expected[t];
      }
      for (int t = 0; t < 5; t++) {
        expected[t] /= sum;
      }
      assertThat(new Sampler(p, 5).probabilities(logits, history())).containsExactly(expected, within(1e-7));
    }

    @Test
    void neutralPenaltiesLeaveTheDistributionAlone() {
      float[] logits = SamplerTest.randomLogits(50, 4);
      TokenCounts none = new TokenCounts();
      assertThat(new Sampler(seeded(1).build(), 50).probabilities(logits, history()))
          .containsExactly(new Sampler(seeded(1).build(), 50).probabilities(logits, none));
    }
  }
}
