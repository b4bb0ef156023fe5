package io.moemesh.model.sampling;

import io.moemesh.model.sampling.SampledToken.TokenLogprob;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The vocabulary-wide passes of the {@link Sampler}: one row of {@code (vocab)} floats each, no full sort.
 *
 * <p>Numerics: every exponential is taken of {@code x - max} (so it is at most 1) in double precision,
 * weights are stored as float and summed in double in index order. The draw re-adds the same floats in
 * the same order, so its running sum retraces the total exactly. A -&infin; logit has weight exactly 0.
 * NaN and +&infin; logits are rejected: they mean the model's output is broken, not a distribution.
 */
final class LogitOps {
  /** Top-p candidate thresholds, relative to the largest weight (which is exactly 1). */
  private static final float[] NUCLEUS_THRESHOLDS = {0x1p-4f, 0x1p-10f, 0x1p-20f, 0x1p-40f, Float.MIN_VALUE};

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

  /** {@code log Σ exp(x_i)}, computed as {@code max + log Σ exp(x_i - max)} in double. */
  static double logSumExp(float[] x, float max) {
    double sum = 0;
    for (float v : x) {
      sum += Math.exp(v - (double) max);
    }
    return max + Math.log(sum);
  }

  /**
   * The {@code n} largest entries as {@code (id, x_id - logSumExp)}, descending, ties by ascending id.
   * O(vocab) comparisons against the current n-th best; insertions are rare after the first few.
   */
  static List<TokenLogprob> top(float[] x, int n, double logSumExp) {
    n = Math.min(n, x.length);
    int[] ids = new int[n];
    float[] values = new float[n];
    int size = 0;
    for (int i = 0; i < x.length; i++) {
      float v = x[i];
      int j;
      if (size < n) {
        j = size++;
      } else if (n > 0 && v > values[n - 1]) { // strictly: an equal value with a higher id ranks lower
        j = n - 1;
      } else {
        continue;
      }
      for (; j > 0 && values[j - 1] < v; j--) {
        values[j] = values[j - 1];
        ids[j] = ids[j - 1];
      }
      values[j] = v;
      ids[j] = i;
    }
    List<TokenLogprob> top = new ArrayList<>(n);
    for (int j = 0; j < n; j++) {
      top.add(new TokenLogprob(ids[j], values[j] - logSumExp));
    }
    return top;
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
   * In place: {@code x_i ← exp((x_i - max) / temperature)} where {@code x_i ≥ floor}, else 0.
   *
   * @return the sum of the weights, in double
   */
  static double toWeights(float[] x, float max, double temperature, float floor) {
    double total = 0;
    for (int i = 0; i < x.length; i++) {
      float w = x[i] >= floor ? (float) Math.exp((x[i] - (double) max) / temperature) : 0f;
      x[i] = w;
      total += w;
    }
    return total;
  }

  /**
   * Top-p (nucleus), in place on weights whose maximum is 1: ranks tokens by (weight desc, id asc) and
   * keeps them until the kept mass reaches {@code topP · total}; the token that crosses is kept. This is
   * vLLM's rule (drop a token when the mass ranked strictly before it is already ≥ top_p), so at least the
   * top token survives. Only tokens above a threshold are sorted: the threshold is lowered until the mass
   * above it reaches the target, which for a peaked distribution leaves a few hundred candidates.
   *
   * @return the sum of the kept weights
   */
  static double keepNucleus(float[] w, double total, double topP) {
    double target = topP * total;
    float threshold = Float.MIN_VALUE;
    int count = 0;
    for (float t : NUCLEUS_THRESHOLDS) {
      double mass = 0;
      count = 0;
      for (float v : w) {
        if (v >= t) {
          mass += v;
          count++;
        }
      }
      threshold = t;
      if (mass >= target) {
        break;
      }
    }
    long[] keys = new long[count];
    for (int i = 0, c = 0; i < w.length; i++) {
      if (w[i] >= threshold) {
        keys[c++] = rankKey(w[i], i);
      }
    }
    Arrays.sort(keys);
    long cut = keys[count - 1];
    double kept = 0;
    for (int j = count - 1; j >= 0 && kept < target; j--) {
      kept += Float.intBitsToFloat((int) (keys[j] >>> 32));
      cut = keys[j];
    }
    double newTotal = 0;
    for (int i = 0; i < w.length; i++) {
      if (w[i] > 0 && rankKey(w[i], i) < cut) {
        w[i] = 0;
      }
      newTotal += w[i];
    }
    return newTotal;
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

  /** Orders non-negative weights ascending, and equal weights by descending id (so ascending id ranks first). */
  private static long rankKey(float weight, int id) {
    return ((long) Float.floatToRawIntBits(weight) << 32) | (Integer.MAX_VALUE - id);
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
