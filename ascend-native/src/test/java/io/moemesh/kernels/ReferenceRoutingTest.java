package io.moemesh.kernels;

import static io.moemesh.kernels.DType.F32;
import static io.moemesh.kernels.DType.I32;
import static io.moemesh.kernels.DType.I8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The reference's MoE routing worked by hand: the gate's choice and weights, gatherQuantize, scatterAdd. */
class ReferenceRoutingTest extends ReferenceFixture {
  @Nested
  class MoeGate {
    /** Logits whose sigmoids are {@code scores}. */
    Tensor logitsOf(float... scores) {
      float[] logits = new float[scores.length];
      for (int e = 0; e < scores.length; e++) logits[e] = (float) Math.log(scores[e] / (1 - scores[e]));
      return floats(logits, 1, scores.length);
    }

    /** The worked example: 8 experts in 4 groups of 2, keep 2 groups, choose 2 experts, weights × 2.5. */
    static final GateParams GATE = new GateParams(2, 4, 2, true, 2.5f);
    //                                     group 0     group 1      group 2     group 3
    static final float[] SCORES = {0.9f, 0.1f, 0.6f, 0.55f, 0.7f, 0.2f, 0.3f, 0.35f};

    @Test
    void keepsTheBestGroupsThenTheBestExpertsInThem() {
      // Group scores (top-2 sums) 1.0, 1.15, 0.9, 0.65: groups 1 and 0 stay; experts 0 (0.9) and 2 (0.6).
      Tensor ids = arena.allocate(I32, 1, 2);
      Tensor weights = arena.allocate(F32, 1, 2);
      kernels.moeGate(ids, weights, logitsOf(SCORES), arena.allocate(F32, 8), GATE);
      assertThat(ints(ids)).containsExactly(0, 2);
      assertThat(weights.getFloat(0)).isCloseTo(0.9f / 1.5f * 2.5f, within(1e-6f));
      assertThat(weights.getFloat(1)).isCloseTo(0.6f / 1.5f * 2.5f, within(1e-6f));
    }

    @Test
    void biasSteersTheChoiceButTheWeightsComeFromUnbiasedScores() {
      // +0.3 on group 2 lifts it to 1.5 (top), then group 1 (1.15): expert 0, the best score overall, is out.
      // Selection 4 (1.0), 2 (0.6); weights from the plain scores 0.7 and 0.6.
      Tensor ids = arena.allocate(I32, 1, 2);
      Tensor weights = arena.allocate(F32, 1, 2);
      Tensor bias = floats(new float[] {0, 0, 0, 0, 0.3f, 0.3f, 0, 0}, 8);
      kernels.moeGate(ids, weights, logitsOf(SCORES), bias, GATE);
      assertThat(ints(ids)).containsExactly(4, 2);
      assertThat(weights.getFloat(0)).isCloseTo(0.7f / 1.3f * 2.5f, within(1e-6f));
      assertThat(weights.getFloat(1)).isCloseTo(0.6f / 1.3f * 2.5f, within(1e-6f));
    }

    @Test
    void withoutBiasScoresAGroupByItsBestExpert() {
      // Group 0 = {0.9, 0.1}: best 0.9, top-2 sum 1.0; group 1 = {0.6, 0.6}: best 0.6, sum 1.2.
      var oneGroup = new GateParams(1, 2, 1, false, 1f);
      Tensor logits = logitsOf(0.9f, 0.1f, 0.6f, 0.6f);
      Tensor ids = arena.allocate(I32, 1, 1);
      Tensor weights = arena.allocate(F32, 1, 1);
      kernels.moeGate(ids, weights, logits, null, oneGroup);
      assertThat(ints(ids)).containsExactly(0);
      kernels.moeGate(ids, weights, logits, arena.allocate(F32, 4), oneGroup); // a (zero) bias: top-2 sums
      assertThat(ints(ids)).containsExactly(2);
    }

    @Test
    void breaksTiesTowardsLowerGroupsAndLowerExperts() {
      Tensor ids = arena.allocate(I32, 1, 3);
      Tensor weights = arena.allocate(F32, 1, 3);
      kernels.moeGate(ids, weights, arena.allocate(F32, 1, 8), null, new GateParams(3, 4, 2, true, 3f));
      assertThat(ints(ids)).containsExactly(0, 1, 2);
      assertThat(weights.toFloatArray()).containsExactly(1f, 1f, 1f); // (0.5 / 1.5) · 3
    }

    @Test
    void withoutNormalizationScalesTheScoresThemselves() {
      Tensor ids = arena.allocate(I32, 1, 2);
      Tensor weights = arena.allocate(F32, 1, 2);
      kernels.moeGate(ids, weights, logitsOf(0.2f, 0.8f, 0.5f), null, new GateParams(2, 1, 1, false, 2f));
      assertThat(ints(ids)).containsExactly(1, 2);
      assertThat(weights.getFloat(0)).isCloseTo(1.6f, within(1e-6f));
      assertThat(weights.getFloat(1)).isCloseTo(1f, within(1e-6f));
    }
  }

  @Nested
  class GatherQuantize {
    @Test
    void quantizesTheChosenRowsInOrderRepeatsIncluded() {
      Tensor x = floats(new float[] {1, 2, 0, 0, -4, 0.5f}, 3, 2);
      Tensor q = arena.allocate(I8, 4, 2);
      Tensor scales = arena.allocate(F32, 4);
      kernels.gatherQuantize(q, scales, x, arena.ofInts(new int[] {2, 0, 1, 2}, 4));
      assertThat(bytes(q)).containsExactly(-127, 16, 64, 127, 0, 0, -127, 16); // 15.875 → 16, 63.5 → 64
      assertThat(scales.toFloatArray()).containsExactly(4f / 127, 2f / 127, 0f, 4f / 127);
    }

    @Test
    void rejectsARowOutOfRangeWritingNothing() {
      Tensor q = TestTensors.garbage(arena, I8, 2, 2);
      Tensor scales = TestTensors.garbage(arena, F32, 2);
      assertThatThrownBy(() -> kernels.gatherQuantize(q, scales, arena.allocate(F32, 3, 2), arena.ofInts(new int[] {0, 3}, 2)))
          .isInstanceOf(KernelException.class).hasMessageStartingWith("gatherQuantize: rows[1] = 3");
      assertThat(bytes(q)).containsOnly(0x5A);
      assertThat(scales.toFloatArray()).containsOnly(Float.NaN);
    }
  }

  @Nested
  class ScatterAdd {
    @Test
    void addsInIndexOrder() {
      // 1 + 1e8 = 1e8 (ulp 8), + 1 = 1e8, − 1e8 = 0. Summing the 1s first would give 2.
      Tensor out = floats(new float[] {1}, 1, 1);
      kernels.scatterAdd(out, floats(new float[] {1e8f, 1, -1e8f}, 3, 1), arena.ofInts(new int[] {0, 0, 0}, 3),
          floats(new float[] {1, 1, 1}, 3));
      assertThat(out.getFloat(0)).isEqualTo(0f);
    }

    @Test
    void accumulatesWeightedRowsIntoRepeatedTargets() {
      Tensor out = floats(new float[] {10, 20, 30, 40, 50, 60}, 3, 2);
      kernels.scatterAdd(out, floats(new float[] {1, 2, 3, 4, 5, 6}, 3, 2), arena.ofInts(new int[] {2, 0, 2}, 3),
          floats(new float[] {0.5f, 2, -1}, 3));
      assertThat(out.toFloatArray()).containsExactly(16, 28, 30, 40, 50.5f - 5, 61 - 6);
    }

    @Test
    void roundsTheProductBeforeTheSum() {
      // w·y = (1 + 2⁻¹²)² = 1 + 2⁻¹¹ + 2⁻²⁴ rounds to 1 + 2⁻¹¹; then −1 gives 2⁻¹¹
      // (a fused a·b + c would keep the 2⁻²⁴).
      float a = 1 + 0x1p-12f;
      Tensor out = floats(new float[] {-1}, 1, 1);
      kernels.scatterAdd(out, floats(new float[] {a}, 1, 1), arena.ofInts(new int[] {0}, 1), floats(new float[] {a}, 1));
      assertThat(out.getFloat(0)).isEqualTo(0x1p-11f);
    }

    @Test
    void rejectsARowOutOfRangeBeforeWritingAnything() {
      Tensor out = floats(new float[] {1, 2}, 2, 1);
      assertThatThrownBy(() -> kernels.scatterAdd(out, floats(new float[] {5, 5}, 2, 1), arena.ofInts(new int[] {0, -1}, 2),
          floats(new float[] {1, 1}, 2)))
          .isInstanceOf(KernelException.class).hasMessageStartingWith("scatterAdd: rows[1] = -1");
      assertThat(out.toFloatArray()).containsExactly(1, 2);
    }
  }
}
