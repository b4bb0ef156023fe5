package io.moemesh.kernels;

import static io.moemesh.kernels.DType.BF16;
import static io.moemesh.kernels.DType.F32;
import static io.moemesh.kernels.DType.F8_E4M3;
import static io.moemesh.kernels.DType.I32;
import static io.moemesh.kernels.DType.I8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.assertj.core.api.Assertions.withinPercentage;

import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The spec checked by hand: small worked examples whose answers are computed on paper or by an independent,
 * straightforward formula in the test (in double where it matters). The contract tests then hold every
 * other implementation to this one.
 */
class ReferenceKernelsTest {
  final Kernels kernels = new ReferenceKernels();
  TensorArena arena;

  @BeforeEach
  void openArena() {
    arena = TensorArena.open();
  }

  @AfterEach
  void closeArena() {
    arena.close();
  }

  Tensor floats(float[] values, int... shape) {
    return arena.ofFloats(values, shape);
  }

  Tensor bf16(float[] values, int... shape) {
    Tensor t = arena.allocate(BF16, shape);
    t.copyFrom(values);
    return t;
  }

  byte[] bytes(Tensor t) {
    byte[] b = new byte[Math.toIntExact(t.numElements())];
    for (int i = 0; i < b.length; i++) b[i] = t.getByte(i);
    return b;
  }

  int[] ints(Tensor t) {
    int[] v = new int[Math.toIntExact(t.numElements())];
    for (int i = 0; i < v.length; i++) v[i] = t.getInt(i);
    return v;
  }

  @Test
  void isNamedReference() {
    assertThat(kernels.name()).isEqualTo("reference");
  }

  @Nested
  class Matmul {
    @Test
    void dotsEachRowWithEachWeightRow() {
      Tensor out = arena.allocate(F32, 2, 2);
      kernels.matmul(out, floats(new float[] {1, 2, 3, 4, 5, 6}, 2, 3), floats(new float[] {1, 0, -1, 0.5f, 0.5f, 0.5f}, 2, 3));
      assertThat(out.toFloatArray()).containsExactly(-2f, 3f, -2f, 7.5f);
    }

    @Test
    void upcastsBf16WeightsExactly() {
      float[] w = {1.5f, -0.375f, 3f, 0.0078125f};
      Tensor x = floats(new float[] {0.1f, 0.2f}, 1, 2);
      Tensor fromF32 = arena.allocate(F32, 1, 2);
      Tensor fromBf16 = arena.allocate(F32, 1, 2);
      kernels.matmul(fromF32, x, floats(w, 2, 2));
      kernels.matmul(fromBf16, x, bf16(w, 2, 2));
      assertThat(fromBf16.toFloatArray()).containsExactly(fromF32.toFloatArray());
    }

    @Test
    void sumsOneTermAtATimeInIndexOrder() {
      // ((1e8 + 1) − 1e8) + 1: the first 1 is absorbed (ulp(1e8) = 8); a pairwise order would give 2.
      Tensor out = arena.allocate(F32, 1, 1);
      kernels.matmul(out, floats(new float[] {1e8f, 1, -1e8f, 1}, 1, 4), floats(new float[] {1, 1, 1, 1}, 1, 4));
      assertThat(out.getFloat(0)).isEqualTo(1f);
    }
  }

  @Nested
  class QuantizeRows {
    @Test
    void scalesByTheLargestMagnitude() {
      Tensor q = arena.allocate(I8, 1, 3);
      Tensor scales = arena.allocate(F32, 1);
      kernels.quantizeRows(q, scales, floats(new float[] {0.5f, -1f, 0.25f}, 1, 3));
      assertThat(scales.getFloat(0)).isEqualTo(1f / 127f);
      assertThat(bytes(q)).containsExactly(64, -127, 32); // 63.5 → 64 (even), 31.75 → 32
    }

    @Test
    void roundsTiesToEven() {
      // amax 127 makes the inverse scale exactly 1, so q = rint(x).
      Tensor q = arena.allocate(I8, 1, 8);
      Tensor scales = arena.allocate(F32, 1);
      kernels.quantizeRows(q, scales, floats(new float[] {127, 2.5f, -2.5f, 3.5f, 0.5f, -0.5f, 1.5f, -126.5f}, 1, 8));
      assertThat(bytes(q)).containsExactly(127, 2, -2, 4, 0, 0, 2, -126);
      assertThat(scales.getFloat(0)).isEqualTo(1f);
    }

    @Test
    void givesAnAllZeroRowScaleZeroAndZeros() {
      Tensor q = TestTensors.garbage(arena, I8, 2, 3);
      Tensor scales = TestTensors.garbage(arena, F32, 2);
      kernels.quantizeRows(q, scales, floats(new float[] {0, 0, 0, 1, 2, -4}, 2, 3));
      assertThat(bytes(q)).containsExactly(0, 0, 0, 32, 64, -127); // 31.75 → 32, 63.5 → 64
      assertThat(scales.toFloatArray()).containsExactly(0f, 4f / 127f);
    }

    @Test
    void quantizesBf16InputAsItsF32Value() {
      float[] x = {0.3f, -1.7f, 2.2f, 0.01f};
      Tensor bf = bf16(x, 1, 4);
      Tensor fromBf16 = arena.allocate(I8, 1, 4);
      Tensor fromF32 = arena.allocate(I8, 1, 4);
      Tensor s1 = arena.allocate(F32, 1);
      Tensor s2 = arena.allocate(F32, 1);
      kernels.quantizeRows(fromBf16, s1, bf);
      kernels.quantizeRows(fromF32, s2, floats(bf.toFloatArray(), 1, 4));
      assertThat(bytes(fromBf16)).containsExactly(bytes(fromF32));
      assertThat(s1.getFloat(0)).isEqualTo(s2.getFloat(0));
    }
  }

  @Nested
  class MatmulInt8 {
    @Test
    void accumulatesExactlyThenScalesLeftToRight() {
      Tensor out = arena.allocate(F32, 1, 2);
      Tensor xq = TestTensors.bytes(arena, I8, new int[] {1, 2, 3}, 1, 3);
      Tensor w = TestTensors.bytes(arena, I8, new int[] {4, 5, 6, -127, 127, -127}, 2, 3);
      kernels.matmulInt8(out, xq, floats(new float[] {0.5f}, 1), w, floats(new float[] {0.25f, 3f}, 2));
      assertThat(out.toFloatArray()).containsExactly(32 * 0.5f * 0.25f, -254 * 0.5f * 3f);
    }

    @Test
    void roundsASumPast2To24OnlyOnce() {
      int k = 2041; // 2041 · 127² = 32 919 289: odd and above 2²⁵, so not an F32
      Tensor xq = arena.allocate(I8, 1, k);
      Tensor w = arena.allocate(I8, 1, k);
      for (int j = 0; j < k; j++) {
        xq.setByte(j, (byte) 127);
        w.setByte(j, (byte) 127);
      }
      Tensor out = arena.allocate(F32, 1, 1);
      kernels.matmulInt8(out, xq, floats(new float[] {1}, 1), w, floats(new float[] {1}, 1));
      assertThat(out.getFloat(0)).isEqualTo((float) 32_919_289L).isNotEqualTo(f32SequentialSum(127 * 127, k));
    }

    /** What an F32 accumulator would give: it drifts once past 2²⁴. */
    private static float f32SequentialSum(int term, int times) {
      float acc = 0;
      for (int i = 0; i < times; i++) acc += term;
      return acc;
    }
  }

  @Nested
  class Fp8 {
    @Test
    void decodesKnownBytes() {
      assertThat(Fp8E4M3.toFloat((byte) 0x00)).isEqualTo(0f);
      assertThat(Fp8E4M3.toFloat((byte) 0x38)).isEqualTo(1f);
      assertThat(Fp8E4M3.toFloat((byte) 0x7E)).isEqualTo(448f);
      assertThat(Fp8E4M3.toFloat((byte) 0x01)).isEqualTo((float) Math.scalb(1.0, -9));
      assertThat(Fp8E4M3.toFloat((byte) 0x08)).isEqualTo((float) Math.scalb(1.0, -6)); // smallest normal
      assertThat(Fp8E4M3.toFloat((byte) 0xB8)).isEqualTo(-1f);
      assertThat(Fp8E4M3.toFloat((byte) 0x7F)).isNaN();
      assertThat(Fp8E4M3.toFloat((byte) 0xFF)).isNaN();
    }

    @Test
    void appliesEachBlocksScaleUpToRaggedEdges() {
      // w (5, 7) of 1.0 with 4×4 blocks: scaleInv (2, 2); the last block row and column are partial.
      Tensor w = arena.allocate(F8_E4M3, 5, 7);
      for (int i = 0; i < 35; i++) w.setByte(i, (byte) 0x38);
      Tensor out = arena.allocate(F32, 5, 7);
      kernels.dequantizeFp8(out, w, floats(new float[] {1, 2, 3, 4}, 2, 2), 4);
      float[] expected = new float[35];
      for (int i = 0; i < 5; i++) for (int j = 0; j < 7; j++) expected[i * 7 + j] = (i < 4 ? 1 : 3) + (j < 4 ? 0 : 1);
      assertThat(out.toFloatArray()).containsExactly(expected);
    }

    @Test
    void multipliesTheDecodedValueByItsScale() {
      Tensor w = TestTensors.bytes(arena, F8_E4M3, new int[] {0x01, 0x7E, 0xB8, 0x00}, 1, 4);
      Tensor out = arena.allocate(F32, 1, 4);
      kernels.dequantizeFp8(out, w, floats(new float[] {0.5f}, 1, 1), 128);
      assertThat(out.toFloatArray()).containsExactly((float) Math.scalb(1.0, -10), 224f, -0.5f, 0f);
    }

    @Test
    void roundsBf16OutputToNearestEven() {
      Tensor w = TestTensors.bytes(arena, F8_E4M3, new int[] {0x38, 0x38}, 1, 2);
      float tieDown = 1 + 0x1p-8f; // halfway between 1 and 1 + 2⁻⁷: even is 1
      float tieUp = 1 + 3 * 0x1p-8f; // halfway between 1 + 2⁻⁷ and 1 + 2⁻⁶: even is 1 + 2⁻⁶
      Tensor out = arena.allocate(BF16, 1, 2);
      kernels.dequantizeFp8(out, w, floats(new float[] {tieDown, tieUp}, 1, 2), 1);
      assertThat(out.toFloatArray()).containsExactly(1f, 1 + 0x1p-6f);
    }
  }

  @Nested
  class RmsNorm {
    @Test
    void dividesByTheRootMeanSquareAndScales() {
      Tensor out = arena.allocate(F32, 1, 2);
      kernels.rmsNorm(out, floats(new float[] {3, 4}, 1, 2), floats(new float[] {1, 2}, 2), 1e-6f);
      double rms = Math.sqrt((9 + 16) / 2.0 + 1e-6);
      assertThat(out.getFloat(0)).isCloseTo((float) (3 / rms), within(1e-6f));
      assertThat(out.getFloat(1)).isCloseTo((float) (2 * 4 / rms), within(1e-6f));
    }

    @Test
    void epsKeepsAZeroRowFinite() {
      Tensor out = TestTensors.garbage(arena, F32, 1, 3);
      kernels.rmsNorm(out, arena.allocate(F32, 1, 3), floats(new float[] {1, 1, 1}, 3), 1e-6f);
      assertThat(out.toFloatArray()).containsExactly(0f, 0f, 0f);
    }

    @Test
    void mayNormalizeInPlace() {
      Tensor x = floats(new float[] {1, -2, 3, 0.5f, 0.25f, 8}, 2, 3);
      Tensor weight = floats(new float[] {1, 0.5f, 2}, 3);
      Tensor apart = arena.allocate(F32, 2, 3);
      kernels.rmsNorm(apart, x, weight, 1e-5f);
      kernels.rmsNorm(x, x, weight, 1e-5f);
      assertThat(x.toFloatArray()).containsExactly(apart.toFloatArray());
    }
  }

  @Nested
  class Rope {
    /** Pair 0 turns by π/2 per position, pair 1 not at all. */
    RopeTable quarterTurns() {
      return RopeTable.of(arena, new float[] {(float) (Math.PI / 2), 0}, 4);
    }

    @Test
    void rotatesAPairByItsAngle() {
      Tensor x = floats(new float[] {1, 0, 3, 4}, 1, 4);
      kernels.rope(x, arena.ofInts(new int[] {1}, 1), quarterTurns());
      float[] v = x.toFloatArray();
      assertThat(v[0]).isCloseTo(0f, within(1e-7f)); // (1, 0) → (cos 90°, sin 90°)
      assertThat(v[1]).isEqualTo(1f);
      assertThat(new float[] {v[2], v[3]}).containsExactly(3f, 4f);
    }

    @Test
    void rotatesByTwiceTheAngleAtTwiceThePosition() {
      Tensor x = floats(new float[] {2, 5, 0, 0}, 1, 4);
      kernels.rope(x, arena.ofInts(new int[] {2}, 1), quarterTurns());
      assertThat(x.getFloat(0)).isCloseTo(-2f, within(1e-6f)); // 180°
      assertThat(x.getFloat(1)).isCloseTo(-5f, within(1e-6f));
    }

    @Test
    void leavesPositionZeroUnchanged() {
      float[] v = {0.3f, -7f, 1e-3f, 42f};
      Tensor x = floats(v, 1, 4);
      kernels.rope(x, arena.ofInts(new int[] {0}, 1), quarterTurns());
      assertThat(x.toFloatArray()).containsExactly(v);
    }

    @Test
    void givesEveryHeadOfATokenTheTokensPosition() {
      Tensor x = floats(new float[] {1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}, 2, 3, 2); // (tokens, heads, 2): all (1, 0)
      RopeTable table = RopeTable.of(arena, new float[] {(float) (Math.PI / 2)}, 4);
      kernels.rope(x, arena.ofInts(new int[] {0, 1}, 2), table);
      float[] v = x.toFloatArray();
      for (int h = 0; h < 3; h++) {
        assertThat(new float[] {v[2 * h], v[2 * h + 1]}).containsExactly(1f, 0f);
        assertThat(v[6 + 2 * h]).isCloseTo(0f, within(1e-7f));
        assertThat(v[6 + 2 * h + 1]).isEqualTo(1f);
      }
    }

    @Test
    void rejectsAPositionOutsideTheTableWritingNothing() {
      Tensor x = floats(new float[] {1, 2, 3, 4, 5, 6, 7, 8}, 2, 4);
      assertThatThrownBy(() -> kernels.rope(x, arena.ofInts(new int[] {1, 4}, 2), quarterTurns()))
          .isInstanceOf(KernelException.class).hasMessageStartingWith("rope: row 1: position 4");
      assertThat(x.toFloatArray()).containsExactly(1, 2, 3, 4, 5, 6, 7, 8);
    }
  }

  @Nested
  class SiluMul {
    @Test
    void multipliesSiluOfGateByUp() {
      float[] gate = {0, 1, -1, 20, -3.5f};
      float[] up = {5, 2, 2, 1, -0.5f};
      Tensor out = arena.allocate(F32, 1, 5);
      kernels.siluMul(out, floats(gate, 1, 5), floats(up, 1, 5));
      for (int j = 0; j < 5; j++) {
        double expected = gate[j] / (1 + Math.exp(-gate[j])) * up[j];
        assertThat(out.getFloat(j)).isCloseTo((float) expected, within((float) Math.abs(expected) * 1e-6f));
      }
    }

    @Test
    void saturatesWithoutNaN() {
      Tensor out = arena.allocate(F32, 1, 2);
      kernels.siluMul(out, floats(new float[] {-100, 100}, 1, 2), floats(new float[] {3, 3}, 1, 2));
      assertThat(out.toFloatArray()).containsExactly(-0f, 300f); // e^100 overflows: −100 / ∞ = −0
    }
  }

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
  class MlaDecode {
    @Test
    void oneVisiblePositionReturnsItsLatent() {
      // pages (1, 2, 3 + 1): rank 3, rope 1; only position 0 is visible.
      Tensor pages = floats(new float[] {0.5f, -2, 7, 1, 9, 9, 9, 9}, 1, 2, 4);
      Tensor out = arena.allocate(F32, 1, 1, 3);
      kernels.mlaDecode(out, floats(new float[] {1, 2, 3}, 1, 1, 3), floats(new float[] {4}, 1, 1, 1),
          new PagedLatentKv(pages, arena.ofInts(new int[] {0}, 1, 1), arena.ofInts(new int[] {1}, 1)), 0.3f);
      float[] v = out.toFloatArray();
      assertThat(v[0]).isCloseTo(0.5f, withinPercentage(1e-4));
      assertThat(v[1]).isCloseTo(-2f, withinPercentage(1e-4));
      assertThat(v[2]).isCloseTo(7f, withinPercentage(1e-4));
    }

    @Test
    void equalScoresAverageTheVisibleLatents() {
      // A zero query scores every position 0: the output is the plain mean of the first 3 latents.
      Tensor pages = floats(new float[] {1, 0, 4, 0, 7, 0, 100, 0}, 2, 2, 2); // rank 1, rope 1
      Tensor out = arena.allocate(F32, 1, 1, 1);
      kernels.mlaDecode(out, arena.allocate(F32, 1, 1, 1), arena.allocate(F32, 1, 1, 1),
          new PagedLatentKv(pages, arena.ofInts(new int[] {0, 1}, 1, 2), arena.ofInts(new int[] {3}, 1)), 1f);
      assertThat(out.getFloat(0)).isEqualTo(4f);
    }

    @Test
    void followsTheBlockTableToItsPages() {
      // The same sequence stored on pages [0, 1] and on pages [2, 0] (swapped copies) attends alike.
      var random = new Random(1);
      Tensor pages = TestTensors.uniform(arena, random, F32, 1, 3, 4, 6);
      Tensor pagesSwapped = arena.allocate(F32, 3, 4, 6);
      pagesSwapped.rows(2, 3).copyFrom(pages.rows(0, 1));
      pagesSwapped.rows(0, 1).copyFrom(pages.rows(1, 2));
      Tensor qLatent = TestTensors.uniform(arena, random, F32, 1, 1, 2, 4);
      Tensor qRope = TestTensors.uniform(arena, random, F32, 1, 1, 2, 2);
      Tensor lens = arena.ofInts(new int[] {7}, 1);
      Tensor direct = arena.allocate(F32, 1, 2, 4);
      Tensor swapped = arena.allocate(F32, 1, 2, 4);
      kernels.mlaDecode(direct, qLatent, qRope, new PagedLatentKv(pages, arena.ofInts(new int[] {0, 1}, 1, 2), lens), 0.5f);
      var swappedKv = new PagedLatentKv(pagesSwapped, arena.ofInts(new int[] {2, 0}, 1, 2), lens);
      kernels.mlaDecode(swapped, qLatent, qRope, swappedKv, 0.5f);
      assertThat(swapped.toFloatArray()).containsExactly(direct.toFloatArray());
    }

    @Test
    void equalsPlainSoftmaxAttentionInDouble() {
      // 4 query rows × 3 heads over pages of 5: lengths 1, 5 (one full page), 12 (partly filled last page), 20 (all).
      var random = new Random(2);
      int rank = 24;
      int rope = 8;
      Attention a = Attention.random(arena, random, new int[] {1, 5, 12, 20}, 3, rank, rope, 5, 4, F32);
      for (float scale : new float[] {0.2f, 1f, 3f}) a.assertMatchesPlainSoftmax(kernels, scale, 1e-5);
      Attention bf = Attention.random(arena, random, new int[] {3, 17, 20}, 2, rank, rope, 5, 4, BF16);
      bf.assertMatchesPlainSoftmax(kernels, 1f, 1e-5);
    }

    @Test
    void rescalesManyTimesAndFlushesVanishedTermsWithoutLosingAccuracy() {
      // Scores climb from about −50 to +50 along the sequence (k_pe[0] = (p − 100) / 2 against qRope[0] = 1,
      // plus a little noise from the latent part), so the integer max of the base-2 scores grows at most steps,
      // and the first terms fall more than 2¹²⁶ below the last (flushed to zero). Every input is a multiple of
      // 1/32, so the scores are exact in F32 and in double alike.
      var random = new Random(3);
      int rank = 32;
      int rope = 4;
      int length = 200;
      int pageSize = 16;
      int numPages = (length + pageSize - 1) / pageSize;
      Tensor pages = arena.allocate(F32, numPages, pageSize, rank + rope);
      for (int p = 0; p < length; p++) {
        long base = (long) p * (rank + rope);
        for (int i = 0; i < rank + rope; i++) pages.setFloat(base + i, (random.nextInt(9) - 4) / 4f);
        pages.setFloat(base + rank, (p - 100) / 2f);
      }
      Tensor qLatent = arena.allocate(F32, 1, 1, rank);
      for (int i = 0; i < rank; i++) qLatent.setFloat(i, (random.nextInt(9) - 4) / 32f);
      Tensor qRope = floats(new float[] {1, 0, 0, 0}, 1, 1, rope);
      int[] blocks = new int[numPages];
      for (int b = 0; b < numPages; b++) blocks[b] = b;
      var a = new Attention(qLatent, qRope, pages, arena.ofInts(blocks, 1, numPages), arena.ofInts(new int[] {length}, 1));

      double[] s2 = a.scores(0, 0, 1f);
      for (int j = 0; j < s2.length; j++) s2[j] /= Math.log(2);
      int maxGrowths = 0;
      double max = s2[0];
      for (double s : s2) if (Math.ceil(s) > Math.ceil(max)) {
        maxGrowths++;
        max = s;
      }
      assertThat(maxGrowths).as("times the running max grew").isGreaterThan(100);
      assertThat(max - s2[0]).as("span of base-2 scores").isGreaterThan(126);
      a.assertMatchesPlainSoftmax(kernels, 1f, 1e-5);
    }

    @Test
    void rejectsAPageIdOutOfRangeNamingTheRow() {
      Tensor out = TestTensors.garbage(arena, F32, 2, 1, 2);
      Tensor before = TestTensors.copy(arena, out);
      Tensor pages = arena.allocate(F32, 2, 2, 3);
      var kv = new PagedLatentKv(pages, arena.ofInts(new int[] {0, 1, 1, 2}, 2, 2), arena.ofInts(new int[] {3, 3}, 2));
      assertThatThrownBy(() -> kernels.mlaDecode(out, arena.allocate(F32, 2, 1, 2), arena.allocate(F32, 2, 1, 1), kv, 1f))
          .isInstanceOf(KernelException.class).hasMessageStartingWith("mlaDecode: row 1: page id 2 at block 1");
      TestTensors.assertBitEqual(out, before, "out after a rejected call");
    }

    @Test
    void rejectsAContextLengthBeyondTheBlockTable() {
      Tensor pages = arena.allocate(F32, 2, 2, 3);
      var kv = new PagedLatentKv(pages, arena.ofInts(new int[] {0, 1}, 1, 2), arena.ofInts(new int[] {5}, 1));
      assertThatThrownBy(() -> kernels.mlaDecode(arena.allocate(F32, 1, 1, 2), arena.allocate(F32, 1, 1, 2),
          arena.allocate(F32, 1, 1, 1), kv, 1f))
          .isInstanceOf(KernelException.class).hasMessageStartingWith("mlaDecode: row 0: context length 5");
    }
  }

  @Nested
  class CausalAttention {
    @Test
    void oneVisibleKeyReturnsItsValue() {
      Tensor out = arena.allocate(F32, 1, 1, 3);
      kernels.attention(out, floats(new float[] {0.3f, -2}, 1, 1, 2), floats(new float[] {5, 1}, 1, 1, 2),
          floats(new float[] {0.25f, -7, 1e-3f}, 1, 1, 3), arena.ofInts(new int[] {1}, 1), 0.7f);
      assertThat(out.toFloatArray()).containsExactly(0.25f, -7, 1e-3f);
    }

    @Test
    void equalScoresAverageTheVisibleValues() {
      // A zero query scores every key 0: row 0 sees keys 0..1, row 1 keys 0..3.
      Tensor out = arena.allocate(F32, 2, 1, 1);
      kernels.attention(out, arena.allocate(F32, 2, 1, 2), floats(new float[] {1, 2, 3, 4, 5, 6, 7, 8}, 4, 1, 2),
          floats(new float[] {1, 2, 3, 10}, 4, 1, 1), arena.ofInts(new int[] {2, 4}, 2), 1f);
      assertThat(out.toFloatArray()).containsExactly(1.5f, 4f);
    }

    @Test
    void equalsSoftmaxAttentionInDouble() {
      var random = new Random(4);
      int nq = 4, nk = 6, heads = 2, dqk = 16, dv = 8;
      Tensor q = TestTensors.uniform(arena, random, F32, 1, nq, heads, dqk);
      Tensor k = TestTensors.uniform(arena, random, F32, 1, nk, heads, dqk);
      Tensor v = TestTensors.uniform(arena, random, F32, 1, nk, heads, dv);
      Tensor out = arena.allocate(F32, nq, heads, dv);
      float scale = 0.9f;
      kernels.attention(out, q, k, v, arena.ofInts(new int[] {3, 4, 5, 6}, nq), scale);
      for (int t = 0; t < nq; t++) {
        for (int h = 0; h < heads; h++) {
          double[] s = new double[3 + t];
          double max = Double.NEGATIVE_INFINITY;
          for (int j = 0; j < s.length; j++) {
            for (int i = 0; i < dqk; i++)
              s[j] += (double) q.getFloat((t * heads + h) * dqk + i) * k.getFloat((j * heads + h) * dqk + i);
            s[j] *= scale;
            max = Math.max(max, s[j]);
          }
          double sum = 0;
          for (int j = 0; j < s.length; j++) sum += Math.exp(s[j] - max);
          for (int i = 0; i < dv; i++) {
            double expected = 0;
            for (int j = 0; j < s.length; j++) expected += Math.exp(s[j] - max) / sum * v.getFloat((j * heads + h) * dv + i);
            assertThat((double) out.getFloat((t * heads + h) * dv + i)).isCloseTo(expected, within(1e-5));
          }
        }
      }
    }

    @Test
    void naiveAttentionOnTheLatentsEqualsAbsorbedDecode() {
      // MLA two ways: mlaDecode over the latent cache, and plain attention whose keys are c_kv ‖ k_pe (shared
      // by every head), whose values are c_kv and whose queries are qLatent ‖ qRope.
      var random = new Random(5);
      int heads = 3, rank = 16, rope = 4, len = 11;
      Attention a = Attention.random(arena, random, new int[] {len}, heads, rank, rope, 4, 3, F32);
      Tensor decoded = arena.allocate(F32, 1, heads, rank);
      kernels.mlaDecode(decoded, a.qLatent(), a.qRope(), a.kv(), 0.4f);

      Tensor q = arena.allocate(F32, 1, heads, rank + rope);
      q.cols(0, rank).copyFrom(a.qLatent());
      q.cols(rank, rank + rope).copyFrom(a.qRope());
      Tensor keys = arena.allocate(F32, len, heads, rank + rope);
      Tensor values = arena.allocate(F32, len, heads, rank);
      for (int j = 0; j < len; j++) {
        int page = a.blockTable().getInt(j / 4);
        Tensor token = a.pages().rows(page, page + 1).reshape(4, rank + rope).rows(j % 4, j % 4 + 1);
        for (int h = 0; h < heads; h++) {
          keys.rows(j, j + 1).reshape(heads, rank + rope).rows(h, h + 1).copyFrom(token);
          values.rows(j, j + 1).reshape(heads, rank).rows(h, h + 1).copyFrom(token.cols(0, rank));
        }
      }
      Tensor naive = arena.allocate(F32, 1, heads, rank);
      kernels.attention(naive, q, keys, values, arena.ofInts(new int[] {len}, 1), 0.4f);
      float[] d = decoded.toFloatArray();
      float[] n = naive.toFloatArray();
      for (int i = 0; i < d.length; i++) assertThat(d[i]).isCloseTo(n[i], within((float) (1e-5 * a.largestLatent(0))));
    }

    @Test
    void rejectsAContextLengthOutOfRangeNamingTheRow() {
      Tensor out = TestTensors.garbage(arena, F32, 2, 1, 2);
      assertThatThrownBy(() -> kernels.attention(out, arena.allocate(F32, 2, 1, 2), arena.allocate(F32, 3, 1, 2),
          arena.allocate(F32, 3, 1, 2), arena.ofInts(new int[] {1, 4}, 2), 1f))
          .isInstanceOf(KernelException.class).hasMessageStartingWith("attention: row 1: context length 4");
      assertThat(out.toFloatArray()).containsOnly(Float.NaN);
    }
  }

  @Nested
  class Add {
    @Test
    void addsElementwise() {
      Tensor out = arena.allocate(F32, 2, 2);
      kernels.add(out, floats(new float[] {1, 2, 3, 1e8f}, 2, 2), floats(new float[] {0.5f, -2, 0.25f, 1}, 2, 2));
      assertThat(out.toFloatArray()).containsExactly(1.5f, 0f, 3.25f, 1e8f); // 1e8 + 1 rounds back to 1e8
    }

    @Test
    void mayWriteIntoEitherInput() {
      Tensor a = floats(new float[] {1, 2, 3}, 1, 3);
      Tensor b = floats(new float[] {10, 20, 30}, 1, 3);
      kernels.add(a, a, b);
      assertThat(a.toFloatArray()).containsExactly(11, 22, 33);
      kernels.add(b, a, b);
      assertThat(b.toFloatArray()).containsExactly(21, 42, 63);
    }
  }

  @Nested
  class TimesPowerOfTwo {
    @Test
    void subtractsFromTheExponent() {
      assertThat(ReferenceKernels.timesPowerOfTwo(1f, 3)).isEqualTo(0.125f);
      assertThat(ReferenceKernels.timesPowerOfTwo(-6f, 2)).isEqualTo(-1.5f);
      assertThat(ReferenceKernels.timesPowerOfTwo(0x1p-125f, 1)).isEqualTo(0x1p-126f);
      assertThat(ReferenceKernels.timesPowerOfTwo(Float.MAX_VALUE, 253)).isEqualTo(Math.scalb(Float.MAX_VALUE, -253));
    }

    @Test
    void flushesWhatWouldLeaveTheNormalRangeToZero() {
      assertThat(ReferenceKernels.timesPowerOfTwo(Float.MIN_NORMAL, 1)).isEqualTo(0f);
      assertThat(ReferenceKernels.timesPowerOfTwo(Float.MAX_VALUE, 254)).isEqualTo(0f); // would be subnormal
      assertThat(ReferenceKernels.timesPowerOfTwo(-0x1p-120f, 7)).isEqualTo(0f);
      assertThat(ReferenceKernels.timesPowerOfTwo(1f, 300)).isEqualTo(0f);
      assertThat(ReferenceKernels.timesPowerOfTwo(0f, 1)).isEqualTo(0f);
      assertThat(ReferenceKernels.timesPowerOfTwo(Float.MIN_VALUE, 1)).isEqualTo(0f);
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

  @Nested
  class Convert {
    @Test
    void roundsF32ToBf16NearestEven() {
      float[] in = {1 + 0x1p-8f, 1 + 3 * 0x1p-8f, 1 + 0x1p-8f + 0x1p-20f, -(1 + 0x1p-8f), 0x1p-130f, Float.MAX_VALUE};
      Tensor out = arena.allocate(BF16, 1, in.length);
      kernels.convert(out, floats(in, 1, in.length));
      assertThat(out.toFloatArray())
          .containsExactly(1f, 1 + 0x1p-6f, 1 + 0x1p-7f, -1f, 0x1p-130f, Float.POSITIVE_INFINITY);
    }

    @Test
    void keepsNaNInfinityAndSignedZero() {
      float[] in = {Float.NaN, Float.NEGATIVE_INFINITY, -0f};
      Tensor out = arena.allocate(BF16, 1, 3);
      kernels.convert(out, floats(in, 1, 3));
      float[] v = out.toFloatArray();
      assertThat(v[0]).isNaN();
      assertThat(v[1]).isEqualTo(Float.NEGATIVE_INFINITY);
      assertThat(Float.floatToRawIntBits(v[2])).isEqualTo(Float.floatToRawIntBits(-0f));
    }

    @Test
    void widensBf16ToF32Exactly() {
      float[] in = {1 + 0x1p-7f, -3.5f, 0x1p-133f, 65280f};
      Tensor out = arena.allocate(F32, 2, 2);
      kernels.convert(out, bf16(in, 2, 2));
      assertThat(out.toFloatArray()).containsExactly(in);
    }
  }

  @Nested
  class Tensors {
    @Test
    void rowsViewSharesMemory() {
      Tensor t = floats(new float[] {0, 1, 2, 3, 4, 5, 6, 7}, 4, 2);
      Tensor middle = t.rows(1, 3);
      assertThat(middle.shape()).containsExactly(2, 2);
      assertThat(middle.toFloatArray()).containsExactly(2, 3, 4, 5);
      middle.setFloat(0, 42);
      assertThat(t.getFloat(2)).isEqualTo(42);
    }

    @Test
    void reshapeKeepsTheElementsOfContiguousTensorsOnly() {
      Tensor t = floats(new float[] {0, 1, 2, 3, 4, 5}, 2, 3);
      assertThat(t.reshape(3, 2).toFloatArray()).containsExactly(0, 1, 2, 3, 4, 5);
      assertThat(t.reshape(3, 2).rowStride()).isEqualTo(2);
      assertThatThrownBy(() -> t.reshape(4, 2)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> t.cols(0, 2).reshape(4)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void colsViewIsRowStrided() {
      Tensor t = floats(new float[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 2, 5);
      Tensor c = t.cols(1, 4);
      assertThat(c.shape()).containsExactly(2, 3);
      assertThat(c.rowStride()).isEqualTo(5);
      assertThat(c.isContiguous()).isFalse();
      assertThat(c.toFloatArray()).containsExactly(1, 2, 3, 6, 7, 8);
    }

    @Test
    void headsOfAColsViewCollapseIntoOneStride() {
      Tensor t = arena.allocate(F32, 2, 3, 8); // (tokens, heads, qk head dim)
      Tensor qPe = t.cols(5, 8);
      assertThat(qPe.numRows()).isEqualTo(6);
      assertThat(qPe.rowLength()).isEqualTo(3);
      assertThat(qPe.rowStride()).isEqualTo(8);
      assertThat(t.rows(1, 2).cols(0, 5).rowStride()).isEqualTo(8);
    }

    @Test
    void copyFromFollowsStrides() {
      Tensor big = arena.allocate(F32, 3, 4);
      big.cols(1, 3).copyFrom(floats(new float[] {1, 2, 3, 4, 5, 6}, 3, 2));
      assertThat(big.toFloatArray()).containsExactly(0, 1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 0);
    }

    @Test
    void shapeMismatchNamesTheOpAndTheShapes() {
      assertThatThrownBy(() -> kernels.matmul(arena.allocate(F32, 2, 4), arena.allocate(F32, 2, 3), arena.allocate(F32, 4, 5)))
          .isInstanceOf(KernelException.class)
          .hasMessageStartingWith("matmul: ")
          .hasMessageContaining("F32(2, 3)")
          .hasMessageContaining("F32(4, 5)");
    }

    @Test
    void dtypeMismatchNamesTheArgument() {
      Tensor bf16X = arena.allocate(BF16, 1, 4);
      assertThatThrownBy(() -> kernels.rmsNorm(arena.allocate(F32, 1, 4), bf16X, arena.allocate(F32, 4), 1e-6f))
          .isInstanceOf(KernelException.class)
          .hasMessageStartingWith("rmsNorm: x must be F32, got BF16(1, 4)");
    }

    @TestFactory
    Stream<DynamicTest> everyOpNamesItselfWhenGivenATensorOfAClosedArena() {
      TensorArena dead = TensorArena.open();
      var calls = SampleCalls.all(arena, dead);
      dead.close();
      return calls.stream().map(c -> DynamicTest.dynamicTest(c.op(), () ->
          assertThatThrownBy(() -> c.call().accept(kernels)).isInstanceOf(KernelException.class)
              .hasMessageStartingWith(c.op() + ": ").hasMessageContaining("closed arena")));
    }
  }
}
