package io.moemesh.kernels;

/**
 * The kernel boundary: every op the model needs from the hardware. {@link ReferenceKernels} is the spec in
 * plain scalar Java; {@link NativeKernels} runs C on the best path the CPU has (AVX-512 with VNNI and BF16, AVX2, or
 * portable C); an Ascend backend would map
 * each op onto CANN operators (docs/ascend.md).
 *
 * <p>Shapes are written {@code (rows, cols)}; a tensor of higher rank is read as a matrix whose rows are all
 * leading dimensions collapsed ({@link Tensor#rowStride()}). Every op is <b>row-independent</b>: an output
 * row depends only on its own input rows, with a fixed reduction order, so results never depend on the
 * thread count or on which other rows share the batch. Bad input throws {@link KernelException} naming the
 * op and the shapes; nothing is written then.
 */
public interface Kernels extends AutoCloseable {
  /** Weight block edge of DeepSeek-V3's FP8 checkpoints ({@code quantization_config.weight_block_size}). */
  int FP8_BLOCK = 128;

  String name();

  /** The instruction-set path that runs ({@code avx512}, {@code avx512-no-bf16}, {@code avx2}, {@code portable}), or
   * {@code reference}: a metric label and a log field. */
  default String path() {
    return "reference";
  }

  /** Releases native resources (threads, contexts); the reference holds none. */
  @Override
  default void close() {}

  /**
   * {@code out = x · wᵀ}, {@code out[t][o] = Σ_j x[t][j]·w[o][j]}. out F32 (n, m); x F32 or BF16 (n, k);
   * w (m, k): F32 or BF16 for an F32 x, BF16 for a BF16 x (a BF16 x with F32 weights is rejected). Each
   * output element is one dot product over k in a fixed order, the same whatever n and the thread count;
   * small n is a GEMV, large n a GEMM.
   * <ul>
   *   <li>F32 x: F32 multiply-adds (BF16 weights upcast exactly).
   *   <li>BF16 x, BF16 w: every product is exact in F32 (two 8-bit significands), the sum is F32 — the
   *       AVX512-BF16 dot product ({@code VDPBF16PS}), about twice the F32 FMA rate. The hardware flushes
   *       subnormal BF16 inputs and F32 partial sums (magnitudes below 2⁻¹²⁶) to zero.
   * </ul>
   * Both paths sum the same products as the reference ({@link ReferenceKernels}: F32, index order), only in
   * another fixed order, so each result is within a small multiple of F32 eps (2⁻²⁴) times
   * {@code Σ_j |x[t][j]·w[o][j]|} of it (at worst k such multiples; KernelsContract allows 1e-5 · Σ|x·w|).
   */
  void matmul(Tensor out, Tensor x, Tensor w);

  /**
   * Per-row symmetric INT8 quantization (activations per token, weights per output channel):
   * {@code amax = max|x|}, {@code scale = amax / 127}, {@code q = clamp(rint(x · (127 / amax)), -127, 127)};
   * an all-zero row gets scale 0 and q 0. q I8 (n, k); scales F32 (n); x F32 or BF16 (n, k).
   */
  void quantizeRows(Tensor q, Tensor scales, Tensor x);

  /**
   * One matmul per head in one call: {@code out[t,h,:] = x[t,h,:] · w[h]ᵀ}, each head bit for bit {@link #matmul} on
   * that head's rows. out F32 (n, heads, m); x F32 or BF16 (n, heads, k) whose (t, h) rows share one row stride (a
   * column slice of a wider (n, heads, ·) tensor is fine); w F32 or BF16 (heads, m, k), contiguous; a BF16 x needs
   * BF16 w. MLA's absorbed output projection (the latent output back out through W_UV, {@code einsum("bshc,hdc->bshd")})
   * is this: hundreds of tiny matmuls a decode step, as one call per layer.
   */
  void matmulHeads(Tensor out, Tensor x, Tensor w);

  /**
   * One matmul per head with weights laid out (heads, k, m), not transposed: {@code out[t,h,o] = Σ_c x[t,h,c] ·
   * w[h,c,o]} — MLA's absorbed W_UK in its checkpoint layout ({@code einsum("bshd,hdc->bshc")} in DeepSeek's
   * reference), so a backend reads its weights as they lie instead of transposing them every call. An F32 x adds each
   * output's products in column order, one rounding per multiply and per add (the reference's bits); a BF16 x (with
   * BF16 w) may sum in an order of its own (AVX-512 adds them pair by pair, outputs across its lanes), within tolerance
   * of the reference. Every (t, h) row's bits are independent of the others in the batch. out F32 (n, heads, m); x F32
   * or BF16 (n, heads, k) whose (t, h) rows share one row stride; w F32 or BF16 (heads, k, m), contiguous.
   */
  void matmulHeadsKm(Tensor out, Tensor x, Tensor w);

  /**
   * {@link #matmulHeadsKm} for a BF16 x, with the BF16 weights given as their {@link HeadsKmPairs}, laid out once at
   * load rather than interleaved on every call: bit for bit {@code matmulHeadsKm(out, x, w)} with the w the pairs were
   * made from. out F32 (n, heads, m); x BF16 (n, heads, k) as for matmulHeadsKm; wPairs BF16
   * {@link HeadsKmPairs#shape}(heads, k, m), contiguous.
   */
  void matmulHeadsKmPairs(Tensor out, Tensor x, Tensor wPairs);

  /**
   * A8W8 matmul: {@code out[t][o] = (float) Σ_j xq[t][j]·w[o][j] · xScales[t] · wScales[o]} with exact
   * INT32 accumulation, multiplied left to right in F32. out F32 (n, m); xq I8 (n, k); xScales F32 (n);
   * w I8 (m, k); wScales F32 (m). INT8 values are in [-127, 127] (as {@link #quantizeRows} makes them).
   */
  void matmulInt8(Tensor out, Tensor xq, Tensor xScales, Tensor w, Tensor wScales);

  /**
   * Grouped A8W8 matmul — a MoE layer's routed experts in one call: rows {@code [rowOffsets[g], rowOffsets[g+1])}
   * of xq form group g, and {@code out[rows] = matmulInt8(xq[rows], xScales[rows], w[g], wScales[g])}. The
   * result is <b>bit-identical</b> to calling {@link #matmulInt8} group by group (exact INT32 sums, the same F32
   * scaling); only the call overhead differs (one hand-off to the threads for all groups). out F32 (n, m);
   * xq I8 (n, k); xScales F32 (n); rowOffsets I32 (groups + 1), non-decreasing from 0 to n; w and wScales one
   * entry per group, every used {@code w[g]} I8 (m, k) with one common row stride and {@code wScales[g]} F32
   * (m). A group with no rows is skipped: its weights are not read and may be null.
   */
  void matmulInt8Grouped(Tensor out, Tensor xq, Tensor xScales, Tensor rowOffsets, Tensor[] w, Tensor[] wScales);

  /**
   * FP8 e4m3 weights with block scales to F32 or BF16, as DeepSeek-V3's {@code weight_dequant}:
   * {@code out[i][j] = fp8(w[i][j]) · scaleInv[i / block][j / block]}. out F32 or BF16 (m, k);
   * w F8_E4M3 (m, k); scaleInv F32 (ceil(m / block), ceil(k / block)).
   */
  void dequantizeFp8(Tensor out, Tensor w, Tensor scaleInv, int block);

  /** {@code out = x / sqrt(mean(x²) + eps) · weight} per row. out, x F32 (n, d); weight F32 (d). May alias. */
  void rmsNorm(Tensor out, Tensor x, Tensor weight, float eps);

  /**
   * Rotary embedding in place on interleaved pairs {@code (x[2i], x[2i+1])}, as DeepSeek's reference does
   * (complex multiplication by {@code cis(pos · freq_i)}). x F32 (n, heads, d) or (n, d); positions I32 (n).
   */
  void rope(Tensor x, Tensor positions, RopeTable table);

  /** {@code out = silu(gate) · up = gate / (1 + e^-gate) · up}, elementwise. All F32 (n, d); out may alias. */
  void siluMul(Tensor out, Tensor gate, Tensor up);

  /**
   * {@link #quantizeRows} of {@link #siluMul}{@code (gate, up)}, bit for bit, without the F32 product in memory: an
   * A8W8 down-projection's input in one pass over gate and up. q I8 (n, d); scales F32 (n); gate, up F32 (n, d).
   */
  void siluMulQuantize(Tensor q, Tensor scales, Tensor gate, Tensor up);

  /**
   * DeepSeek-V3's MoE gate (sigmoid, {@code noaux_tc}): scores = σ(logits); selection uses scores + bias;
   * with groups, a group's score is the sum of its top-2 biased scores (without a bias: its highest score,
   * as in DeepSeek's reference) and only the best {@code topkGroup} groups stay (ties: lower group first); the top-k experts among them are chosen (ties: lower id first); weights are the unbiased
   * scores of the chosen experts, renormalized when {@code normTopkProb}, times {@code routedScalingFactor}.
   * expertIds I32 (n, topk) and weights F32 (n, topk) in descending selection score; logits F32 (n, E);
   * bias F32 (E) or null.
   */
  void moeGate(Tensor expertIds, Tensor weights, Tensor logits, Tensor bias, GateParams params);

  /**
   * Absorbed MLA decode attention over a paged latent cache. For query row t and head h:
   * {@code s_j = (qLatent[t,h]·c_kv[j] + qRope[t,h]·k_pe[j]) · softmaxScale} over the first
   * {@code contextLens[t]} positions j of its pages, {@code out[t,h] = Σ_j softmax(s)_j · c_kv[j]}. The online
   * softmax is AMLA's: scores are taken in base 2 ({@code s·log2 e}), the running max M is an integer (the
   * ceiling of the largest base-2 score so far), each weight is {@code 2^(s − M) ≤ 1} (by one fixed polynomial,
   * the same bits in every backend), and when M grows by Δ the accumulator and the denominator are scaled by
   * {@code 2^−Δ} as an integer subtract of Δ from each F32 exponent field (values that would turn subnormal
   * become 0); inputs are finite. out F32 (nq, heads, kvLoraRank); qLatent (nq, heads, kvLoraRank) and qRope
   * (nq, heads, ropeDim) both F32, or both BF16 over BF16 pages: then attention runs in BF16 as DeepSeek's
   * reference does in BF16 — every score is a sum of exact BF16 × BF16 products (as FlashMLA takes its query),
   * and the weights multiply the values rounded to BF16 (the reference casts its probabilities to BF16 before
   * the value sum), every product exact, summed in F32 — which the native kernels compute with VDPBF16PS.
   */
  void mlaDecode(Tensor out, Tensor qLatent, Tensor qRope, PagedLatentKv kv, float softmaxScale);

  /**
   * Causal attention over explicit keys and values — MLA's naive form, used for prompt tokens: query row t
   * and head h attend key rows {@code j < contextLens[t]},
   * {@code out[t,h] = Σ_j softmax_j(q[t,h]·k[j,h] · softmaxScale) · v[j,h]}, with the ordinary
   * max-subtracting F32 softmax of DeepSeek's reference. out F32 (nq, heads, dv); q F32 (nq, heads, dqk);
   * k F32 (nk, heads, dqk); v F32 (nk, heads, dv); contextLens I32 (nq), each in [1, nk].
   */
  void attention(Tensor out, Tensor q, Tensor k, Tensor v, Tensor contextLens, float softmaxScale);

  /** {@code out = a + b}, elementwise (the residual stream). All F32 (n, d); out may alias a or b. */
  void add(Tensor out, Tensor a, Tensor b);

  /**
   * Dispatch: gathers rows of x into {@code q} quantized per row to INT8 ({@link #quantizeRows} semantics),
   * {@code q[i] = quantize(x[rows[i]])}. q I8 (r, d); scales F32 (r); x F32 (n, d); rows I32 (r).
   */
  void gatherQuantize(Tensor q, Tensor scales, Tensor x, Tensor rows);

  /**
   * Combine: {@code out[rows[i]] += weights[i] · y[i]} for i = 0, 1, … in that order (never by arrival).
   * out F32 (n, d); y F32 (r, d); rows I32 (r); weights F32 (r).
   */
  void scatterAdd(Tensor out, Tensor y, Tensor rows, Tensor weights);

  /** Elementwise dtype conversion F32 → BF16 (round to nearest even) or BF16 → F32. Same shape. */
  void convert(Tensor out, Tensor in);

  /**
   * Greedy sampling, row by row: {@code ids[t]} = the lowest index of the largest value of row t, or -1 when the row
   * holds a NaN or +∞, or only -∞ (no token can be picked; the sampler says which entry is wrong). ids I32 (n);
   * x F32 (n, d), d ≥ 1. Exact: every backend picks the same index.
   */
  void argmaxRows(Tensor ids, Tensor x);
}
