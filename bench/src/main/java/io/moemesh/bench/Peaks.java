package io.moemesh.bench;

import io.moemesh.kernels.NativeKernels;
import java.util.function.LongToDoubleFunction;

/**
 * The machine's arithmetic peaks on a kernel context's threads: the native register-only INT8 (VPDPBUSD) and BF16
 * (VDPBF16PS) loops, each sized to run about {@link #SECONDS}, best of {@link #RUNS} (a peak is a maximum, not a
 * typical value). GOP/s, two ops per multiply-add.
 */
final class Peaks {
  static final int RUNS = 5;
  static final double SECONDS = 0.1;

  private Peaks() {}

  static double int8Gops(NativeKernels kernels) {
    return best(kernels::measureInt8PeakGops);
  }

  static double bf16Gops(NativeKernels kernels) {
    return best(kernels::measureBf16PeakGops);
  }

  private static double best(LongToDoubleFunction run) {
    long iterations = 1 << 16;
    while (iterations < (1L << 40)) {
      long t0 = System.nanoTime();
      run.applyAsDouble(iterations);
      if ((System.nanoTime() - t0) / 1e9 >= SECONDS / 4) break;
      iterations *= 2;
    }
    iterations *= 4; // about SECONDS per run
    double best = 0;
    for (int r = 0; r < RUNS; r++) best = Math.max(best, run.applyAsDouble(iterations));
    return best;
  }
}
