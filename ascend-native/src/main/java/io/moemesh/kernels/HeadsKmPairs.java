package io.moemesh.kernels;

import java.util.Arrays;

/**
 * Weights laid out (heads, k, m) — MLA's W_UK as it lies in W_KV_B — as the column pairs a BF16 dot-product
 * instruction takes (AVX512-BF16's VDPBF16PS multiplies two consecutive k's at once), made once at load for
 * {@link Kernels#matmulHeadsKmPairs} instead of on every call: head h, block b of 32 outputs, pair j holds
 * {@code (w[h][2j][32b + o], w[h][2j + 1][32b + o])} for o &lt; 32, zero past k and m. A private weight format like
 * Ascend's (made once by {@code aclnnTransMatmulWeight}), here defined by this class alone.
 */
public final class HeadsKmPairs {
  private HeadsKmPairs() {}

  /** The pairs' BF16 shape for w (heads, k, m): (heads, ceil(m / 32), ceil(k / 2), 64). */
  public static int[] shape(int heads, int k, int m) {
    return new int[] {heads, (m + 31) / 32, (k + 1) / 2, 64};
  }

  /** Writes the pairs of w (heads, k, m) BF16 into {@code pairs} (BF16, {@link #shape}). */
  public static void fill(Tensor pairs, Tensor w) {
    int heads = w.dim(0), k = w.dim(1), m = w.dim(2);
    requireShapes(pairs, w);
    float[] from = w.toFloatArray(), to = new float[Math.toIntExact(pairs.numElements())]; // BF16 widens exactly
    for (int h = 0; h < heads; h++)
      for (int c = 0; c < k; c++)
        for (int o = 0; o < m; o++) to[index(h, c, o, k, m)] = from[(h * k + c) * m + o];
    pairs.copyFrom(to);
  }

  /** The weights w (heads, k, m) BF16 the pairs were made from: {@link #fill}'s inverse. */
  public static void unpair(Tensor w, Tensor pairs) {
    int heads = w.dim(0), k = w.dim(1), m = w.dim(2);
    requireShapes(pairs, w);
    float[] from = pairs.toFloatArray(), to = new float[Math.toIntExact(w.numElements())];
    for (int h = 0; h < heads; h++)
      for (int c = 0; c < k; c++)
        for (int o = 0; o < m; o++) to[(h * k + c) * m + o] = from[index(h, c, o, k, m)];
    w.copyFrom(to);
  }

  /** Where w[h][c][o] lies among the pairs. */
  private static int index(int h, int c, int o, int k, int m) {
    int blocks = (m + 31) / 32, pairsPerBlock = (k + 1) / 2;
    return ((h * blocks + o / 32) * pairsPerBlock + c / 2) * 64 + o % 32 * 2 + c % 2;
  }

  private static void requireShapes(Tensor pairs, Tensor w) {
    if (w.dtype() != DType.BF16 || w.rank() != 3 || !w.isContiguous())
      throw new IllegalArgumentException("w must be contiguous BF16 (heads, k, m), got " + w);
    int[] expected = shape(w.dim(0), w.dim(1), w.dim(2));
    if (pairs.dtype() != DType.BF16 || !pairs.isContiguous() || !Arrays.equals(pairs.shape(), expected))
      throw new IllegalArgumentException("pairs of " + w + " must be contiguous BF16 " + Arrays.toString(expected) + ", got " + pairs);
  }
}
