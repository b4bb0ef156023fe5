package io.moemesh.model.sampling;

import java.util.Arrays;

/**
 * The vocabulary-wide passes of the {@link Sampler}: one row of {@code (vocab)} floats each, no full sort.
 *
 * <p>Numerics: every exponential is taken of {@code x - max} (so it is at most 1) in double precision,
 * weights are stored as float and summed in double in index order. The draw re-adds the same floats in
 * the same order, so its running sum retraces the total exactly. A -&infin; logit has weight exactly 0.
 * NaN and +&infin; logits are rejected: they mean the model's output is broken, not a distribution.
 */
final class LogitOps {
  /** exp(-87) ≈ 1.6e-38 is the smallest weight kept; below it a float weight would be subnormal. */
  static final double MIN_EXPONENT = -87.0;
  /** Top-p's radix select: the float bits [21, 31), [10, 21), [0, 10) (the sign bit is 0). */
  private static final int[] RADIX_SHIFTS = {21, 10, 0};
  private static final int[] RADIX_DIGITS = {0x3FF, 0x7FF, 0x3FF};

  private LogitOps() {}

  /**
   * The index of the largest value, ties to the lowest index.
   *
   * @throws IllegalArgumentException on a NaN or +&infin; entry, or when every entry is -&infin;
   */
  static int argmax(float[] x) {
    int best = 0;
    float max = Float.NEGATIVE_INFINITY;
    for (int i = 0; i < x.length; i++) {
      float v = x[i];
      if (v > max) {
        if (v == Float.POSITIVE_INFINITY) {
          throw new IllegalArgumentException("logits[" + i + "] is +Infinity");
        }
        max = v;
        best = i;
      } else if (v != v) {
        throw new IllegalArgumentException("logits[" + i + "] is NaN");
      }
    }
    if (max == Float.NEGATIVE_INFINITY) {
      throw new IllegalArgumentException("every logit is -Infinity: no token can be sampled");
    }
    return best;
  }

  /**
   * The k-th largest value, for top-k: entries below it are outside the top k, entries equal to it are
   * kept (so ties at the boundary may keep more than k, as vLLM's {@code logits < kth} mask does).
   * A min-heap of the k best so far: O(vocab) comparisons plus O(k log k · log(vocab / k)) heap work.
   */
  static float kthLargest(float[] x, int k) {
    float[] heap = Arrays.copyOf(x, k);
    for (int i = k / 2 - 1; i >= 0; i--) {
      siftDown(heap, i);
    }
    for (int i = k; i < x.length; i++) {
      if (x[i] > heap[0]) {
        heap[0] = x[i];
        siftDown(heap, 0);
      }
    }
    return heap[0];
  }

  /**
   * {@code w_i ← exp((x_i - max) / temperature)} where {@code x_i ≥ floor}, else 0 ({@code w} may be
   * {@code x}). Exponents
   * below {@value #MIN_EXPONENT} give 0 without calling {@code exp}: such weights would be subnormal
   * floats (&lt; 1.2e-38 of the top token's), which lose precision and slow every later pass.
   *
   * @return the sum of the weights, in double
   */
  static double toWeights(float[] x, float max, double temperature, float floor, float[] w) {
    double minGap = MIN_EXPONENT * temperature; // (x - max) / T > MIN_EXPONENT, without dividing first
    double total = 0;
    for (int i = 0; i < x.length; i++) {
      double gap = x[i] - (double) max;
      float weight = x[i] >= floor && gap > minGap ? (float) Math.exp(gap / temperature) : 0f;
      w[i] = weight;
      total += weight;
    }
    return total;
  }

  /**
   * Top-p (nucleus), in place on weights whose largest is exactly 1 (as {@link #toWeights} leaves them;
   * top-k never drops the top token): ranks tokens by (weight desc, id asc) and keeps them until the
   * kept mass reaches {@code topP · total}; the token that crosses is kept. This is vLLM's rule (drop a
   * token when the mass ranked strictly before it is already ≥ top_p), so the top token always survives.
   *
   * <p>No sort: a radix select on the float bits, which order non-negative floats. Each of three passes
   * histograms the mass of the tokens still in play by the next bits (10, 11, 10) and descends into the
   * bucket where the running mass crosses the target; after the last pass that bucket is one exact weight,
   * whose ties are kept in id order while the mass before them is below the target. O(vocab) always,
   * even for a flat distribution whose nucleus is most of the vocabulary; one pass when the top token
   * alone reaches the target.
   *
   * @return the sum of the kept weights
   */
  static double keepNucleus(float[] w, double total, double topP) {
    double target = topP * total;
    if (target <= 1) { // the top token (lowest id among weight-1 ties) is the whole nucleus
      int top = -1;
      for (int i = 0; i < w.length; i++) {
        if (top < 0 && w[i] == 1f) {
          top = i;
        } else {
          w[i] = 0;
        }
      }
      return 1;
    }
    double before = 0; // mass of the tokens ranked above the current bucket; always < target
    int prefix = 0;
    int prefixMask = 0;
    for (int level = 0; level < RADIX_SHIFTS.length; level++) {
      int shift = RADIX_SHIFTS[level];
      int digits = RADIX_DIGITS[level];
      double[] mass = new double[digits + 1];
      for (float v : w) {
        int bits = Float.floatToRawIntBits(v);
        if (v > 0 && (bits & prefixMask) == prefix) {
          mass[(bits >>> shift) & digits] += v;
        }
      }
      int chosen = -1;
      int lowestNonEmpty = -1;
      for (int digit = digits; digit >= 0 && chosen < 0; digit--) {
        if (mass[digit] > 0) {
          lowestNonEmpty = digit;
          if (before + mass[digit] >= target) {
            chosen = digit;
          } else {
            before += mass[digit];
          }
        }
      }
      if (chosen < 0) { // rounding left the target just out of reach: the last bucket holds the crossing
        chosen = lowestNonEmpty;
        before -= mass[chosen];
      }
      prefix |= chosen << shift;
      prefixMask |= digits << shift;
    }
    float cutWeight = Float.intBitsToFloat(prefix);
    double kept = 0;
    for (int i = 0; i < w.length; i++) {
      if (w[i] < cutWeight) {
        w[i] = 0;
      } else if (w[i] == cutWeight) {
        if (before < target) {
          before += cutWeight;
        } else {
          w[i] = 0;
        }
      }
      kept += w[i];
    }
    return kept;
  }

  /**
   * Min-p, in place on weights whose maximum is 1: zeroes {@code w_i < minP}, i.e. {@code p_i < min_p · p_max}.
   *
   * @return the sum of the kept weights
   */
  static double keepAtLeast(float[] w, double minP) {
    double total = 0;
    for (int i = 0; i < w.length; i++) {
      if (w[i] < minP) {
        w[i] = 0;
      }
      total += w[i];
    }
    return total;
  }

  /**
   * Inverse-CDF draw: the first index whose running weight sum exceeds {@code u · total}, {@code u ∈ [0, 1)};
   * if rounding lets {@code u · total} reach the total, the last positive weight.
   */
  static int draw(float[] w, double total, double u) {
    double target = u * total;
    double running = 0;
    int last = -1;
    for (int i = 0; i < w.length; i++) {
      if (w[i] > 0) {
        running += w[i];
        last = i;
        if (running > target) {
          return i;
        }
      }
    }
    return last;
  }

  private static void siftDown(float[] heap, int i) {
    int n = heap.length;
    float v = heap[i];
    while (true) {
      int child = 2 * i + 1;
      if (child >= n) {
        break;
      }
      if (child + 1 < n && heap[child + 1] < heap[child]) {
        child++;
      }
      if (heap[child] >= v) {
        break;
      }
      heap[i] = heap[child];
      i = child;
    }
    heap[i] = v;
  }
}
