package io.moemesh.kernels;

import static io.moemesh.kernels.DType.BF16;
import static io.moemesh.kernels.DType.F32;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The reference's row-wise ops worked by hand: rmsNorm, rope, siluMul, add and convert. */
class ReferenceRowOpsTest extends ReferenceFixture {
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
}
