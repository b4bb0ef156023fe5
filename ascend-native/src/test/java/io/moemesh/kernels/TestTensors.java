package io.moemesh.kernels;

import static org.assertj.core.api.Assertions.fail;

import java.util.Arrays;
import java.util.Random;

/**
 * Tensors for kernel tests: random fills, copies, garbage-filled outputs, views embedded in bigger tensors,
 * and the two ways results are compared (bit for bit, or within a tolerance of a stated magnitude).
 */
final class TestTensors {
  private TestTensors() {}

  /** What outputs start as: a kernel must overwrite every element (NaN and odd bytes are easy to spot). */
  static Tensor garbage(TensorArena arena, DType dtype, int... shape) {
    Tensor t = arena.allocate(dtype, shape);
    fillGarbage(t);
    return t;
  }

  private static void fillGarbage(Tensor t) {
    for (long i = 0; i < t.numElements(); i++) {
      switch (t.dtype()) {
        case F32, BF16 -> t.setFloat(i, Float.NaN);
        case I8, F8_E4M3 -> t.setByte(i, (byte) 0x5A);
        case I32 -> t.setInt(i, 0x7A7A7A7A);
      }
    }
  }

  /** Uniform in (−bound, bound), BF16 rounded to nearest even. */
  static Tensor uniform(TensorArena arena, Random random, DType dtype, float bound, int... shape) {
    Tensor t = arena.allocate(dtype, shape);
    for (long i = 0; i < t.numElements(); i++) t.setFloat(i, (2 * random.nextFloat() - 1) * bound);
    return t;
  }

  /** Uniform F32 in (−bound, bound) with each row scaled by 10^u, u uniform in [−3, 3]: magnitudes vary by row. */
  static Tensor rowScaled(TensorArena arena, Random random, DType dtype, int... shape) {
    Tensor t = arena.allocate(dtype, shape);
    int d = t.rowLength();
    for (long r = 0; r < t.numRows(); r++) {
      float scale = (float) Math.pow(10, 6 * random.nextDouble() - 3);
      for (int j = 0; j < d; j++) t.setFloat(r * d + j, (2 * random.nextFloat() - 1) * scale);
    }
    return t;
  }

  /** INT8 values in [−127, 127], the range {@link Kernels#quantizeRows} produces. */
  static Tensor int8(TensorArena arena, Random random, int... shape) {
    Tensor t = arena.allocate(DType.I8, shape);
    for (long i = 0; i < t.numElements(); i++) t.setByte(i, (byte) (random.nextInt(255) - 127));
    return t;
  }

  /** Any of the 256 FP8 e4m3 encodings, NaNs included. */
  static Tensor fp8(TensorArena arena, Random random, int... shape) {
    Tensor t = arena.allocate(DType.F8_E4M3, shape);
    for (long i = 0; i < t.numElements(); i++) t.setByte(i, (byte) random.nextInt(256));
    return t;
  }

  /** I32 uniform in [from, to). */
  static Tensor ints(TensorArena arena, Random random, int from, int to, int... shape) {
    Tensor t = arena.allocate(DType.I32, shape);
    for (long i = 0; i < t.numElements(); i++) t.setInt(i, from + random.nextInt(to - from));
    return t;
  }

  static Tensor bytes(TensorArena arena, DType dtype, int[] values, int... shape) {
    Tensor t = arena.allocate(dtype, shape);
    for (int i = 0; i < values.length; i++) t.setByte(i, (byte) values[i]);
    return t;
  }

  /** A contiguous copy. */
  static Tensor copy(TensorArena arena, Tensor t) {
    Tensor c = arena.allocate(t.dtype(), t.shape());
    c.copyFrom(t);
    return c;
  }

  /** A copy of t living inside a bigger, garbage-filled parent; {@link #assertPaddingUntouched} checks the rest. */
  record Embedded(Tensor view, Tensor parent, Tensor parentBefore, boolean strided) {
    /** Nothing outside the view was written. */
    void assertPaddingUntouched(String what) {
      int[] shape = parent.shape();
      long perFirst = parent.numElements() / shape[0];
      int last = shape[shape.length - 1];
      for (long i = 0; i < parent.numElements(); i++) {
        long first = i / perFirst;
        long col = i % last;
        boolean inside = shape.length == 1
            ? i >= 3 && i < 3 + view.dim(0)
            : first >= 1 && first < 1 + view.dim(0) && (!strided || col >= 3 && col < 3 + view.rowLength());
        if (!inside && bits(parent, i) != bits(parentBefore, i))
          fail(what + ": element " + i + " of " + parent + " outside the view " + view + " was written");
      }
    }
  }

  /**
   * Rows [1, 1 + n) and columns [3, 3 + d) of a garbage-filled tensor two rows and five columns bigger:
   * an offset, row-strided view (rowStride ≠ rowLength). A 1-D tensor gets an offset only.
   */
  static Embedded strided(TensorArena arena, Tensor t) {
    return embed(arena, t, true);
  }

  /** Rows [1, 1 + n) of a garbage-filled tensor two rows bigger: offset but still contiguous. */
  static Embedded offset(TensorArena arena, Tensor t) {
    return embed(arena, t, false);
  }

  private static Embedded embed(TensorArena arena, Tensor t, boolean strided) {
    int[] shape = t.shape();
    int[] big = shape.clone();
    Tensor parent;
    Tensor view;
    if (shape.length == 1) {
      big[0] += 5;
      parent = garbage(arena, t.dtype(), big);
      view = parent.cols(3, 3 + shape[0]);
    } else {
      big[0] += 2;
      if (strided) big[big.length - 1] += 5;
      parent = garbage(arena, t.dtype(), big);
      view = parent.rows(1, 1 + shape[0]);
      if (strided) view = view.cols(3, 3 + shape[shape.length - 1]);
    }
    view.copyFrom(t);
    return new Embedded(view, parent, copy(arena, parent), strided && shape.length > 1);
  }

  // ---- comparisons ----------------------------------------------------------------------------------------

  /**
   * The comparable bits of element i: raw bytes of I8/FP8, the int of I32, and for F32/BF16 the float's
   * bits with every NaN made the canonical NaN (NaN payloads are not part of any op's contract).
   */
  static long bits(Tensor t, long i) {
    return switch (t.dtype()) {
      case I8, F8_E4M3 -> t.getByte(i);
      case I32 -> t.getInt(i);
      case F32, BF16 -> Float.floatToIntBits(t.getFloat(i));
    };
  }

  static void assertBitEqual(Tensor actual, Tensor expected, String what) {
    requireSameShape(actual, expected, what);
    long mismatches = 0;
    long first = -1;
    for (long i = 0; i < expected.numElements(); i++) {
      if (bits(actual, i) != bits(expected, i)) {
        if (mismatches++ == 0) first = i;
      }
    }
    if (mismatches > 0)
      fail(what + ": " + mismatches + " of " + expected.numElements() + " elements differ bitwise; first at "
          + where(expected, first) + ": " + show(actual, first) + " but expected " + show(expected, first));
  }

  /**
   * |actual − expected| ≤ tolerance · magnitude[i] + Float.MIN_NORMAL for every element, where magnitude is
   * the op's natural error scale (e.g. Σ|x·w| of a dot product). NaN must meet NaN, an infinity itself.
   */
  static void assertClose(Tensor actual, Tensor expected, double[] magnitude, double tolerance, String what) {
    requireSameShape(actual, expected, what);
    for (long i = 0; i < expected.numElements(); i++) {
      float a = actual.getFloat(i);
      float e = expected.getFloat(i);
      boolean ok = Float.isNaN(e) || Float.isInfinite(e)
          ? Float.compare(a, e) == 0
          : Math.abs((double) a - e) <= tolerance * magnitude[(int) i] + Float.MIN_NORMAL;
      if (!ok)
        fail(what + ": at " + where(expected, i) + " got " + a + " but expected " + e + " ± "
            + (float) (tolerance * magnitude[(int) i]) + " (tolerance " + tolerance + " × magnitude "
            + (float) magnitude[(int) i] + ")");
    }
  }

  /** |expected| element by element: the magnitude of elementwise ops. */
  static double[] absolute(Tensor expected) {
    double[] m = new double[Math.toIntExact(expected.numElements())];
    for (int i = 0; i < m.length; i++) m[i] = Math.abs(expected.getFloat(i));
    return m;
  }

  private static void requireSameShape(Tensor actual, Tensor expected, String what) {
    if (actual.dtype() != expected.dtype() || !Arrays.equals(actual.shape(), expected.shape()))
      fail(what + ": got " + actual + ", expected " + expected);
  }

  private static String where(Tensor t, long i) {
    return "row " + i / t.rowLength() + " col " + i % t.rowLength();
  }

  private static String show(Tensor t, long i) {
    return switch (t.dtype()) {
      case I8, F8_E4M3 -> String.format("0x%02X", t.getByte(i) & 0xFF);
      case I32 -> Integer.toString(t.getInt(i));
      case F32, BF16 -> t.getFloat(i) + String.format(" (0x%08X)", Float.floatToRawIntBits(t.getFloat(i)));
    };
  }
}
