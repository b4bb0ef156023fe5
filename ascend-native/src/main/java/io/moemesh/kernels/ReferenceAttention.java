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
   * The weights are {@link #exp2}'s, the same bits in every backend; with {@code bf16Weights} each multiplies
   * the values rounded to BF16 (as DeepSeek's reference casts its probabilities to the activations' BF16 before
   * the value sum), while l sums them unrounded.
   *
   * @return out = o / l, i.e. Σ_j softmax(s)_j · c_kv[j]  (kvLoraRank)
   */
  static float[] attend(float[] qLatent, float[] qRope, PagedLatentKv kv, Sequence seq, float softmaxScale,
      boolean bf16Weights) {
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
      float weight = exp2(s2 - m); // ≤ 1
      l += weight;
      float value = bf16Weights ? BFloat16.toFloat(BFloat16.fromFloat(weight)) : weight;
      for (int i = 0; i < rank; i++) o[i] += value * token[i];
    }
    for (int i = 0; i < rank; i++) o[i] = o[i] / l;
    return o;
  }

  /**
   * AMLA's weight 2^x (x ≤ 0) as every backend computes it, bit for bit: x = n + f with n = rint(x) and f in
   * [-1/2, 1/2], 2^f by a degree-6 minimax polynomial in fused multiply-adds (within 1.02 ulp of exact on
   * [-126, 0]), times 2^n exactly; below -126, where it would turn subnormal, +0. Exactly the same bits
   * everywhere, so a weight rounded to BF16 is the same BF16 in every backend.
   */
  static float exp2(float x) {
    if (x < -126f) return 0f;
    float n = (float) Math.rint(x);
    float f = x - n;
    float p = 1.5594678161326619e-04f;
    p = Math.fma(p, f, 1.3406643902351759e-03f);
    p = Math.fma(p, f, 9.6176929729930623e-03f);
    p = Math.fma(p, f, 5.5503105510137972e-02f);
    p = Math.fma(p, f, 2.4022652782887737e-01f);
    p = Math.fma(p, f, 6.9314721496802790e-01f);
    p = Math.fma(p, f, 1.0f);
    return Math.scalb(p, (int) n);
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
