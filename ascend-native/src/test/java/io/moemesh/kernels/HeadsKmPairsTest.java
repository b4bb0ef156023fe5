package io.moemesh.kernels;

import static io.moemesh.kernels.DType.BF16;
import static io.moemesh.kernels.DType.F32;
import static io.moemesh.kernels.TestTensors.assertBitEqual;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Random;
import org.junit.jupiter.api.Test;

/** The pair layout {@link Kernels#matmulHeadsKmPairs} reads, made from and back to (heads, k, m) weights. */
class HeadsKmPairsTest {

  @Test
  void pairsTwoRowsColumnByColumnInBlocksOf32OutputsZeroPastTheWeights() {
    try (var arena = TensorArena.confined()) {
      int heads = 2, k = 3, m = 33; // an odd k and a last block of one output
      Tensor w = arena.allocate(BF16, heads, k, m);
      float[] values = new float[heads * k * m];
      for (int i = 0; i < values.length; i++) values[i] = i + 1; // exact in BF16 up to 256
      w.copyFrom(values);
      Tensor pairs = arena.allocate(BF16, HeadsKmPairs.shape(heads, k, m));
      assertThat(pairs.shape()).containsExactly(2, 2, 2, 64);
      HeadsKmPairs.fill(pairs, w);
      float[] p = pairs.toFloatArray();
      // head 1, block 0, pair 1, output 5: (w[1][2][5], w[1][3][5] = 0, past k)
      assertThat(p[((1 * 2 + 0) * 2 + 1) * 64 + 5 * 2]).isEqualTo(w(values, 1, 2, 5, k, m));
      assertThat(p[((1 * 2 + 0) * 2 + 1) * 64 + 5 * 2 + 1]).isZero();
      // head 0, block 1, pair 0: output 32 is (w[0][0][32], w[0][1][32]); output 33 is past m
      assertThat(p[((0 * 2 + 1) * 2) * 64]).isEqualTo(w(values, 0, 0, 32, k, m));
      assertThat(p[((0 * 2 + 1) * 2) * 64 + 1]).isEqualTo(w(values, 0, 1, 32, k, m));
      assertThat(p[((0 * 2 + 1) * 2) * 64 + 2]).isZero();
    }
  }

  private static float w(float[] values, int h, int c, int o, int k, int m) {
    return values[(h * k + c) * m + o];
  }

  @Test
  void unpairGivesBackTheWeights() {
    try (var arena = TensorArena.confined()) {
      Tensor w = TestTensors.uniform(arena, new Random(3), BF16, 1, 3, 65, 70);
      Tensor pairs = arena.allocate(BF16, HeadsKmPairs.shape(3, 65, 70)), back = arena.allocate(BF16, 3, 65, 70);
      HeadsKmPairs.fill(pairs, w);
      HeadsKmPairs.unpair(back, pairs);
      assertBitEqual(back, w, "unpair(fill(w))");
    }
  }

  @Test
  void rejectsOtherShapesAndDtypes() {
    try (var arena = TensorArena.confined()) {
      Tensor w = arena.allocate(BF16, 2, 4, 8);
      assertThatThrownBy(() -> HeadsKmPairs.fill(arena.allocate(BF16, HeadsKmPairs.shape(2, 4, 40)), w))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("pairs of");
      assertThatThrownBy(() -> HeadsKmPairs.fill(arena.allocate(BF16, HeadsKmPairs.shape(2, 4, 8)), arena.allocate(F32, 2, 4, 8)))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("must be contiguous BF16 (heads, k, m)");
    }
  }
}
