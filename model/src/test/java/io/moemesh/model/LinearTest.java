package io.moemesh.model;

import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.NativeKernels;
import io.moemesh.kernels.ProfilingKernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link Linear#matmul}: 2-3 rows of a BF16 or F32 weight go to the kernels one row a call (their fast path), with
 * the bits of one call over all rows.
 */
class LinearTest {
  static NativeKernels kernels;

  @BeforeAll
  static void open() {
    kernels = NativeKernels.create(2);
  }

  @AfterAll
  static void close() {
    kernels.close();
  }

  @ParameterizedTest
  @CsvSource({"BF16, BF16", "BF16, F32", "F32, F32"})
  void rowByRowHasTheBitsOfOneCall(DType weights, DType activations) {
    try (TensorArena arena = TensorArena.open()) {
      Tensor w = random(arena, weights, 300, 260, 1);
      Tensor x = random(arena, activations, 6, 260, 2);
      for (int n = 1; n <= 6; n++) {
        Tensor expected = arena.allocate(DType.F32, n, 300), actual = arena.allocate(DType.F32, n, 300);
        kernels.matmul(expected, x.rows(0, n), w);
        var counting = new ProfilingKernels(kernels);
        Linear.matmul(counting, actual, x.rows(0, n), w);
        assertThat(actual.toFloatArray()).as("%d rows", n).containsExactly(expected.toFloatArray());
        long calls = counting.snapshot().stream().mapToLong(ProfilingKernels.OpTime::calls).sum();
        assertThat(calls).as("kernel calls for %d rows", n).isEqualTo(n > 1 && n < Linear.ROW_BY_ROW_BELOW ? n : 1);
      }
    }
  }

  private static Tensor random(TensorArena arena, DType dtype, int rows, int cols, long seed) {
    var random = new SplittableRandom(seed);
    float[] values = new float[rows * cols];
    for (int i = 0; i < values.length; i++) values[i] = (float) random.nextGaussian();
    Tensor f32 = arena.ofFloats(values, rows, cols);
    if (dtype == DType.F32) return f32;
    Tensor converted = arena.allocate(dtype, rows, cols);
    kernels.convert(converted, f32);
    return converted;
  }
}
