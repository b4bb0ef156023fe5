package io.moemesh.bench;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Tensor;

/**
 * Random tensor contents from a xorshift64* generator: fast enough to fill 64 MiB through the element
 * accessors in well under a second. The values do not change the timings; they only keep the data honest.
 */
final class Fill {
  private long state;

  Fill(long seed) {
    state = seed == 0 ? 0x9E3779B97F4A7C15L : seed;
  }

  private long next() {
    state ^= state >>> 12;
    state ^= state << 25;
    state ^= state >>> 27;
    return state * 0x2545F4914F6CDD1DL;
  }

  /** Uniform INT8 in [-127, 127], the range {@code matmulInt8} accepts. */
  void int8(Tensor t) {
    long n = t.numElements();
    for (long i = 0; i < n; i += 8) {
      long bits = next();
      for (int j = 0; j < 8 && i + j < n; j++, bits >>>= 8) {
        byte v = (byte) bits;
        t.setByte(i + j, v == Byte.MIN_VALUE ? -127 : v);
      }
    }
  }

  /** Uniform in [lo, hi) into an F32 or BF16 tensor. */
  void uniform(Tensor t, float lo, float hi) {
    long n = t.numElements();
    for (long i = 0; i < n; i++) t.setFloat(i, lo + (hi - lo) * ((next() >>> 40) * 0x1p-24f));
  }

  /** Every element of an F32 or BF16 tensor set to {@code value}. */
  static void constant(Tensor t, float value) {
    if (t.dtype() != DType.F32 && t.dtype() != DType.BF16) throw new IllegalArgumentException("constant fill of " + t);
    for (long i = 0; i < t.numElements(); i++) t.setFloat(i, value);
  }
}
