package io.moemesh.kernels;

/**
 * How {@link ReferenceKernels} reads and writes tensors, and the one reduction it is built of: a row of a
 * tensor (read as a matrix) copied into a Java array and back, BF16 and FP8 decoded on the way in and BF16
 * rounded to nearest even on the way out; and the F32 dot product summed in index order.
 */
final class ReferenceRows {
  private ReferenceRows() {}

  /** Σ_j a[j]·b[offset + j] in F32, j = 0 … a.length-1 in order. */
  static float dot(float[] a, float[] b, int offset) {
    float acc = 0f;
    for (int j = 0; j < a.length; j++) acc += a[j] * b[offset + j];
    return acc;
  }

  /** Row r of t read as a matrix, as floats (BF16 and FP8 decoded). */
  static float[] row(Tensor t, long r) {
    float[] v = new float[t.rowLength()];
    long base = r * v.length;
    for (int j = 0; j < v.length; j++) v[j] = t.getFloat(base + j);
    return v;
  }

  static byte[] byteRow(Tensor t, long r) {
    byte[] v = new byte[t.rowLength()];
    long base = r * v.length;
    for (int j = 0; j < v.length; j++) v[j] = t.getByte(base + j);
    return v;
  }

  /** All elements of a (small) tensor as floats, in logical order. */
  static float[] elements(Tensor t) {
    float[] v = new float[Math.toIntExact(t.numElements())];
    for (int i = 0; i < v.length; i++) v[i] = t.getFloat(i);
    return v;
  }

  /** All elements of an I32 tensor, in logical order. */
  static int[] ints(Tensor t) {
    int[] v = new int[Math.toIntExact(t.numElements())];
    for (int i = 0; i < v.length; i++) v[i] = t.getInt(i);
    return v;
  }

  /** Writes row r of t (F32, or BF16 rounded to nearest even). */
  static void store(Tensor t, long r, float[] values) {
    long base = r * values.length;
    for (int j = 0; j < values.length; j++) t.setFloat(base + j, values[j]);
  }

  static void storeBytes(Tensor t, long r, byte[] values) {
    long base = r * values.length;
    for (int j = 0; j < values.length; j++) t.setByte(base + j, values[j]);
  }
}
