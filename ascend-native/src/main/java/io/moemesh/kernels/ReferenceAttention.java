package io.moemesh.kernels;

import static io.moemesh.kernels.ReferenceRows.dot;
import static io.moemesh.kernels.ReferenceRows.row;

/**
 * The softmaxes of {@link ReferenceKernels}' attention ops: DeepSeek's plain F32 softmax for
 * {@link ReferenceKernels#attention}, and for {@link ReferenceKernels#mlaDecode} the online softmax in AMLA
 * form over the paged latent cache, with the checks of its context lengths and page ids.
 */
final class ReferenceAttention {
  private ReferenceAttention() {}

  /** log₂ e as an F32: AMLA's scores live in base 2. */
  static final float LOG2_E = (float) (1 / Math.log(2));

  /** In place: s_j ← e^(s_j − max s) / Σ e^(s − max s), all in F32, sums in index order. */
  static void softmax(float[] s) {
    float max = Float.NEGATIVE_INFINITY;
    for (float v : s) max = Math.max(max, v);
    float sum = 0f;
    for (int j = 0; j < s.length; j++) {
      s[j] = (float) Math.exp(s[j] - max);
      sum += s[j];
    }
    for (int j = 0; j < s.length; j++) s[j] = s[j] / sum;
  }

  /** The positions query row t sees: {@code length} tokens on {@code pageIds} (one per pageSize tokens). */
  record Sequence(int length, int[] pageIds) {}

  /** Reads and checks every row's context length and the page ids it uses. */
  static Sequence[] sequences(PagedLatentKv kv, int nq) {
    int pageSize = kv.pageSize();
    int numPages = kv.pages().dim(0);
    int maxPages = kv.blockTable().rowLength();
    long capacity = (long) maxPages * pageSize;
    Sequence[] sequences = new Sequence[nq];
    for (int t = 0; t < nq; t++) {
      int length = kv.contextLens().getInt(t);
      if (length < 1 || length > capacity)
        throw new KernelException("mlaDecode", "row " + t + ": context length " + length + " is outside [1, "
            + capacity + "] (" + maxPages + " pages of " + pageSize + ")");
      int[] pageIds = new int[(length + pageSize - 1) / pageSize];
      for (int b = 0; b < pageIds.length; b++) {
        pageIds[b] = kv.blockTable().getInt((long) t * maxPages + b);
        if (pageIds[b] < 0 || pageIds[b] >= numPages)
          throw new KernelException("mlaDecode", "row " + t + ": page id " + pageIds[b] + " at block " + b
              + " is outside [0, " + numPages + ")");
      }
      sequences[t] = new Sequence(length, pageIds);
    }
    return sequences;
  }

  /**
   * One query head against its sequence: softmax attention over the latent cache with the online softmax
   * in AMLA form ("multiplication to addition"). Scores move to base 2 (s2 = score·log₂e, F32); the running
   * max m is an integer, ceil of the largest s2 so far, so every weight p = 2^(s2 − m) is ≤ 1 and growing
   * m by Δ rescales the sums by exactly 2^−Δ, which {@link #timesPowerOfTwo} applies as an integer
   * subtraction on the F32 exponents instead of a multiply. Positions are taken in order 0 … length-1.
   *
   * @return out = o / l, i.e. Σ_j softmax(s)_j · c_kv[j]  (kvLoraRank)
   */
  static float[] attend(float[] qLatent, float[] qRope, PagedLatentKv kv, Sequence seq, float softmaxScale) {
    int rank = qLatent.length;
    int pageSize = kv.pageSize();
    float[] o = new float[rank]; // Σ_j 2^(s2_j − m) · c_kv[j]
    float l = 0f;                // Σ_j 2^(s2_j − m)
    int m = 0;                   // ceil(max_j s2_j), set by position 0
    for (int p = 0; p < seq.length(); p++) {
      long page = seq.pageIds()[p / pageSize];
      float[] token = row(kv.pages(), page * pageSize + p % pageSize); // c_kv ‖ k_pe
      float score = (dot(qLatent, token, 0) + dot(qRope, token, rank)) * softmaxScale;
      float s2 = score * LOG2_E;
      int ceil = (int) Math.ceil(s2);
      if (p == 0) m = ceil;
      if (ceil > m) { // the max grew by delta: rescale what was summed by 2^-delta
        int delta = ceil - m;
        l = timesPowerOfTwo(l, delta);
        for (int i = 0; i < rank; i++) o[i] = timesPowerOfTwo(o[i], delta);
        m = ceil;
      }
      float weight = (float) Math.pow(2, s2 - m); // exp2 of an F32 difference, ≤ 1
      l += weight;
      for (int i = 0; i < rank; i++) o[i] += weight * token[i];
    }
    for (int i = 0; i < rank; i++) o[i] = o[i] / l;
    return o;
  }

  /**
   * {@code x · 2^-delta} for delta ≥ 1 as AMLA computes it: delta is subtracted from the F32 exponent field
   * (one integer subtraction of {@code delta << 23} on the raw bits). When the exponent would drop to 0 or
   * below, the result is flushed to 0.0f; 0.0f (and any subnormal) therefore gives 0.0f. x is finite.
   */
  static float timesPowerOfTwo(float x, int delta) {
    int bits = Float.floatToRawIntBits(x);
    int exponent = (bits >>> 23) & 0xFF;
    if (exponent - delta <= 0) return 0f;
    return Float.intBitsToFloat(bits - (delta << 23));
  }
}
