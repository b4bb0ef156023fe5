package io.moemesh.kernels;

import static io.moemesh.kernels.DType.BF16;
import static io.moemesh.kernels.DType.F32;
import static io.moemesh.kernels.DType.F8_E4M3;
import static io.moemesh.kernels.DType.I8;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The reference's linear ops worked by hand: matmul, quantizeRows, matmulInt8, FP8 decoding and dequantizeFp8. */
class ReferenceLinearOpsTest extends ReferenceFixture {
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
    void multipliesBf16ActivationsByBf16WeightsExactly() {
      // (1 + 2⁻⁷)² = 1 + 2⁻⁶ + 2⁻¹⁴ needs 15 significant bits: exact in F32, not representable in BF16.
      float a = 1 + 0x1p-7f;
      Tensor out = arena.allocate(F32, 1, 2);
      kernels.matmul(out, bf16(new float[] {a, 3}, 1, 2), bf16(new float[] {a, 0, -0.5f, 0.25f}, 2, 2));
      assertThat(out.toFloatArray()).containsExactly(1 + 0x1p-6f + 0x1p-14f, 0.24609375f); // −a/2 + 3/4
    }

    @Test
    void bf16ActivationsGiveTheF32PathsBitsOnTheSameValues() {
      var random = new java.util.Random(7);
      int n = 3, m = 5, k = 77;
      float[] xs = new float[n * k], ws = new float[m * k];
      for (int i = 0; i < xs.length; i++) xs[i] = (float) random.nextGaussian();
      for (int i = 0; i < ws.length; i++) ws[i] = (float) random.nextGaussian();
      Tensor xb = bf16(xs, n, k), w = bf16(ws, m, k);
      Tensor fromBf16 = arena.allocate(F32, n, m), fromF32 = arena.allocate(F32, n, m);
      kernels.matmul(fromBf16, xb, w);
      kernels.matmul(fromF32, floats(xb.toFloatArray(), n, k), w);
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
}
