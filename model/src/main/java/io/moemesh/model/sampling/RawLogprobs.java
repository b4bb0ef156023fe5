package io.moemesh.model.sampling;

import io.moemesh.model.sampling.SampledToken.TokenLogprob;
import java.util.ArrayList;
import java.util.List;

/**
 * Raw logprobs of one logits row: {@code log_softmax(x)_i = x_i - log Σ_j exp(x_j)}, the denominator
 * accumulated in double after subtracting the maximum (see {@link SampledToken.Logprobs}).
 */
final class RawLogprobs {
  private RawLogprobs() {}

  /** {@code log Σ exp(x_i)}, computed as {@code max + log Σ exp(x_i - max)} in double. */
  static double logSumExp(float[] x, float max) {
    double sum = 0;
    for (float v : x) {
      double z = v - (double) max;
      if (z > LogitOps.MIN_EXPONENT) { // the rest add < 1e-32 of the total
        sum += Math.exp(z);
      }
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
}
