package io.moemesh.kernels;

import static io.moemesh.kernels.DType.F32;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** {@link Tensor} views: rows, columns and reshapes share memory and follow row strides. */
class TensorTest extends ReferenceFixture {
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

  /** Bulk copies where the memory is dense, element by element through the strides where it is not: the same values. */
  @Test
  void arraysCopyInAndOutOfDenseAndStridedTensors() {
    Tensor ints = arena.allocate(DType.I32, 2, 4);
    ints.copyFrom(new int[] {0, 1, 2, 3, 4, 5, 6, 7});
    assertThat(ints.toIntArray()).containsExactly(0, 1, 2, 3, 4, 5, 6, 7);
    Tensor intCols = ints.cols(1, 3);
    assertThat(intCols.isContiguous()).isFalse();
    assertThat(intCols.toIntArray()).containsExactly(1, 2, 5, 6);
    intCols.copyFrom(new int[] {-1, -2, -5, -6});
    assertThat(ints.toIntArray()).containsExactly(0, -1, -2, 3, 4, -5, -6, 7);
    assertThat(arena.ofInts(new int[] {9, 8, 7}, 3).toIntArray()).containsExactly(9, 8, 7);
    assertThatThrownBy(() -> ints.copyFrom(new int[3])).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> floats(new float[] {1}, 1).toIntArray()).isInstanceOf(UnsupportedOperationException.class);

    Tensor f = floats(new float[6], 2, 3);
    f.cols(1, 3).copyFrom(new float[] {1, 2, 3, 4});
    assertThat(f.toFloatArray()).containsExactly(0, 1, 2, 0, 3, 4);
    assertThat(arena.ofFloats(new float[] {0.5f, -2f}, 2).toFloatArray()).containsExactly(0.5f, -2f);
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
}
