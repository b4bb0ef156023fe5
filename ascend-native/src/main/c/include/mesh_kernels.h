/*
 * mesh_kernels.h — the whole C ABI of MoE Mesh's kernel layer (ascend-native).
 *
 * Ownership: the caller owns every buffer; no pointer is retained after a call returns. Every function
 * returns 0 (MK_OK) or a negative MK_E_* code and writes nothing it was not asked to on error.
 * Layout: row-major; a matrix argument is a pointer to row 0 plus a row stride in elements ("ld*");
 * the last dimension is contiguous. Shapes are validated by the Java side (ValidatingKernels); the C side
 * re-checks what would otherwise read or write out of bounds (index arguments) and null pointers.
 * Determinism: each output row is computed by one thread with a fixed reduction order, so results do not
 * depend on the thread count or on the other rows of a batch.
 * Threads: a context owns a pool of threads; calls on one context are serialized by the context.
 * Floating point: built with -ffp-contract=off so a*b+c rounds twice, exactly as the Java reference.
 */
#ifndef MESH_KERNELS_H
#define MESH_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MK_OK 0
#define MK_E_NULL (-1)        /* a required pointer is null */
#define MK_E_SHAPE (-2)       /* a size is negative or inconsistent */
#define MK_E_INDEX (-3)       /* an index argument (row id, page id, length) is out of range */
#define MK_E_DTYPE (-4)       /* an unsupported dtype code */
#define MK_E_NOMEM (-5)       /* scratch memory could not be allocated */
#define MK_E_THREADS (-6)     /* the thread pool could not be started */

/* dtype codes, as io.moemesh.kernels.DType */
#define MK_F32 0
#define MK_BF16 1
#define MK_F8_E4M3 2
#define MK_I8 3
#define MK_I32 4

/* CPU paths */
#define MK_ISA_PORTABLE 0
#define MK_ISA_AVX512 1      /* AVX-512 F/BW/VL/DQ + VNNI + BF16 */
#define MK_ISA_AVX512_NO_BF16 2 /* AVX-512 F/BW/VL/DQ + VNNI without BF16: every op as MK_ISA_AVX512 except the
                                 * BF16 x BF16 matmul, which runs the portable C kernel */
#define MK_ISA_AVX2 3        /* AVX2 + FMA + F16C (x86-64-v3): 256-bit kernels for CPUs without AVX-512 */

typedef struct mk_context mk_context;

/* A context with `threads` threads (the caller's plus threads-1 workers); `isa` = -1 picks the best the
 * CPU supports (MK_ISA_AVX512, else MK_ISA_AVX512_NO_BF16, else MK_ISA_AVX2, else MK_ISA_PORTABLE), else forces that path
 * (null if the CPU cannot run it). Null on failure. */
mk_context *mk_context_create(int32_t threads, int32_t isa);
void mk_context_destroy(mk_context *ctx);
int32_t mk_context_isa(const mk_context *ctx);
int32_t mk_context_threads(const mk_context *ctx);
/* Whether this CPU can run MK_ISA_AVX512. */
int32_t mk_cpu_has_avx512(void);
/* Whether this CPU can run the path `isa` (MK_ISA_*); 0 for an unknown code. */
int32_t mk_cpu_supports(int32_t isa);

/* Runs a register-only INT8 multiply-accumulate loop (VPDPBUSD on AVX-512) `iterations` times on every
 * thread of the context and returns the INT8 operations done (2 per multiply-add); the caller times it.
 * This is the machine's achievable INT8 peak, the yardstick of the GEMM benchmark. */
double mk_int8_peak_ops(mk_context *ctx, int64_t iterations);
/* The same for BF16 dot products (VDPBF16PS with AVX512-BF16; 2 ops per multiply-add): the yardstick of the
 * BF16 matmuls and of MLA decode. */
double mk_bf16_peak_ops(mk_context *ctx, int64_t iterations);

/* STREAM's triad a[i] = b[i] + s·c[i] for i < n on the context's threads (12 bytes an element by STREAM's count); the
 * caller times it: the memory bandwidth the benchmarks' rooflines use. */
int32_t mk_stream_triad(mk_context *ctx, float *a, const float *b, const float *c, int64_t n, float s);

/* out(n,m) F32 = x(n,k) · w(m,k)ᵀ: out[t][o] = Σ_j x[t][j]·w[o][j], one fixed order per element whatever n.
 *  - x MK_F32, w MK_F32 or MK_BF16 (BF16 upcast exactly): F32 multiply-adds.
 *  - x MK_BF16, w MK_BF16: every product exact, summed in F32 (AVX512-BF16 VDPBF16PS where the path has it;
 *    it flushes subnormal BF16 inputs and F32 partial sums to zero). x BF16 with w F32 is MK_E_DTYPE. */
int32_t mk_matmul(mk_context *ctx, float *out, int64_t ldo, const void *x, int32_t x_dtype, int64_t ldx,
                  const void *w, int32_t w_dtype, int64_t ldw, int64_t n, int64_t m, int64_t k);

/* Per-row symmetric INT8: q(n,k), scales(n), x(n,k) of dtype MK_F32 or MK_BF16. */
/* One matmul per head: out row (t, h) = x row (t, h) · w[h]ᵀ for t < n, h < heads, rows (t, h) at t * heads + h
 * (strides ldo, ldx between consecutive rows), w (heads, m, k) contiguous. Each head's rows give the bits
 * mk_matmul gives them. The heads' weight rows are split across threads together (one hand-off, not heads). */
int32_t mk_matmul_heads(mk_context *ctx, float *out, int64_t ldo, const void *x, int32_t x_dtype, int64_t ldx,
                        const void *w, int32_t w_dtype, int64_t n, int64_t heads, int64_t m, int64_t k);

/* One matmul per head with w in (heads, k, m) layout, x · w[h] (no transpose): out row (t, h)[o] = Σ_c x row (t, h)[c] ·
 * w[h][c][o], rows (t, h) as in mk_matmul_heads, w contiguous. F32 x: every output adds its products in column order,
 * one rounding per multiply and per add (the reference's bits). BF16 x (BF16 w): on AVX512-BF16 pair by pair in column
 * order (VDPBF16PS, outputs across the lanes), elsewhere as F32; the same for any n. */
int32_t mk_matmul_heads_km(mk_context *ctx, float *out, int64_t ldo, const void *x, int32_t x_dtype, int64_t ldx,
                           const void *w, int32_t w_dtype, int64_t n, int64_t heads, int64_t m, int64_t k);

/* mk_matmul_heads_km for BF16 x and w, with w given as its column pairs laid out once (at load) in the order the
 * kernel reads them: wp[((h * ceil(m / 32) + b) * ceil(k / 2) + j) * 64 + 2 * o + e] = w[h][2j + e][32b + o], zero
 * past k or m. Bit for bit mk_matmul_heads_km on the w the pairs were made from (the same sums in the same order),
 * without the per-call interleave of w's rows. */
int32_t mk_matmul_heads_km_pairs(mk_context *ctx, float *out, int64_t ldo, const uint16_t *x, int64_t ldx,
                                 const uint16_t *wp, int64_t n, int64_t heads, int64_t m, int64_t k);

int32_t mk_quantize_rows(mk_context *ctx, int8_t *q, int64_t ldq, float *scales,
                         const void *x, int32_t x_dtype, int64_t ldx, int64_t n, int64_t k);

/* out(n,m) = (float)(xq · wᵀ)[t][o] * xs[t] * ws[o], INT32 accumulation; values in [-127, 127]. */
int32_t mk_matmul_i8(mk_context *ctx, float *out, int64_t ldo, const int8_t *xq, int64_t ldx, const float *xs,
                     const int8_t *w, int64_t ldw, const float *ws, int64_t n, int64_t m, int64_t k);

/* Grouped A8W8, a MoE layer's experts in one call: rows [row_offsets[g], row_offsets[g+1]) of xq (n = row_offsets[groups]
 * rows, row_offsets[0] = 0, non-decreasing; else MK_E_INDEX) are multiplied by w[g] (m,k), row stride ldw, with
 * scales ws[g] (m), exactly as mk_matmul_i8 on that group alone, bit for bit. Groups without rows are skipped
 * (w[g], ws[g] may be null; a null one for a group with rows is MK_E_NULL). All groups' weight rows are split
 * across the threads in one hand-off. */
int32_t mk_matmul_i8_grouped(mk_context *ctx, float *out, int64_t ldo, const int8_t *xq, int64_t ldx, const float *xs,
                             const int32_t *row_offsets, int64_t groups, const int8_t *const *w, int64_t ldw,
                             const float *const *ws, int64_t m, int64_t k);

/* out(m,k) (MK_F32 or MK_BF16) = fp8(w)(m,k) * scale_inv[i/block][j/block]; scale_inv row stride lds. */
int32_t mk_dequant_fp8(mk_context *ctx, void *out, int32_t out_dtype, int64_t ldo, const uint8_t *w, int64_t ldw,
                       const float *scale_inv, int64_t lds, int64_t m, int64_t k, int64_t block);

/* out(n,d) = x / sqrt(mean(x^2) + eps) * weight(d). */
int32_t mk_rms_norm(mk_context *ctx, float *out, int64_t ldo, const float *x, int64_t ldx, const float *weight,
                    float eps, int64_t n, int64_t d);

/* In place on x: rows of `rows_per_pos` consecutive rows (heads) share positions[row / rows_per_pos];
 * pairs (2i, 2i+1) rotated by cos/sin[pos][i]; tables (max_pos, d/2) contiguous. */
int32_t mk_rope(mk_context *ctx, float *x, int64_t ldx, int64_t rows, int64_t rows_per_pos, const int32_t *positions,
                const float *cos_table, const float *sin_table, int64_t max_pos, int64_t d);

/* out = silu(gate) * up on (n,d) matrices. */
/* q(n,d), scales(n) = quantize_rows(silu_mul(gate, up)) bit for bit, the F32 product only in a row buffer. */
int32_t mk_silu_mul_quantize(mk_context *ctx, int8_t *q, int64_t ldq, float *scales, const float *gate, int64_t ldg,
                             const float *up, int64_t ldu, int64_t n, int64_t d);
int32_t mk_silu_mul(mk_context *ctx, float *out, int64_t ldo, const float *gate, int64_t ldg, const float *up,
                    int64_t ldu, int64_t n, int64_t d);

/* DeepSeek-V3 gate; bias may be null. ids/weights (n, topk) contiguous; logits row stride ldl. */
int32_t mk_moe_gate(mk_context *ctx, int32_t *ids, float *weights, const float *logits, int64_t ldl, const float *bias,
                    int64_t n, int64_t experts, int32_t topk, int32_t n_group, int32_t topk_group,
                    int32_t norm_topk_prob, float routed_scaling_factor);

/* Absorbed MLA decode. q_latent/out (nq*heads, rank) row stride ldq/ldo; q_rope (nq*heads, rope) stride ldr;
 * pages (num_pages, page_size, rank + rope) contiguous of dtype MK_BF16 or MK_F32;
 * block_table (nq, max_pages) row stride ldb; context_lens (nq). */
int32_t mk_mla_decode(mk_context *ctx, float *out, int64_t ldo, const void *q_latent, int64_t ldq,
                      const void *q_rope, int64_t ldr, int32_t q_dtype, int64_t nq, int64_t heads, int64_t rank, int64_t rope,
                      const void *pages, int32_t pages_dtype, int64_t num_pages, int64_t page_size,
                      const int32_t *block_table, int64_t ldb, int64_t max_pages, const int32_t *context_lens,
                      float softmax_scale);

/* Causal attention over explicit keys and values (the naive MLA form, used for prompts): query row t
 * (of nq, each with `heads` heads) attends key rows j < context_lens[t]:
 * out[t,h] = softmax_j(q[t,h]·k[j,h] · scale) · v[j,h]. q (nq*heads, dqk) stride ldq; k (nk*heads, dqk)
 * stride ldk; v (nk*heads, dv) stride ldv; out (nq*heads, dv) stride ldo. */
int32_t mk_attention(mk_context *ctx, float *out, int64_t ldo, const float *q, int64_t ldq, const float *k,
                     int64_t ldk, const float *v, int64_t ldv, int64_t nq, int64_t nk, int64_t heads, int64_t dqk,
                     int64_t dv, const int32_t *context_lens, float scale);

/* Greedy sampling: ids[t] = the lowest index of the largest value of row t of x (n, d), stride ldx, d >= 1; -1 when
 * the row holds a NaN or +inf, or only -inf (no token can be picked: the caller's sampler says why). */
int32_t mk_argmax_rows(mk_context *ctx, int32_t *ids, const float *x, int64_t ldx, int64_t n, int64_t d);

/* out = a + b on (n,d) matrices; out may alias a or b. */
int32_t mk_add(mk_context *ctx, float *out, int64_t ldo, const float *a, int64_t lda, const float *b, int64_t ldb,
               int64_t n, int64_t d);

/* q(r,d), scales(r) = quantize_rows(x[rows[i]]); x has n rows. */
int32_t mk_gather_quantize(mk_context *ctx, int8_t *q, int64_t ldq, float *scales, const float *x, int64_t ldx,
                           int64_t n, const int32_t *rows, int64_t r, int64_t d);

/* out[rows[i]] += weights[i] * y[i] for i = 0..r-1 in order; out has n rows. */
int32_t mk_scatter_add(mk_context *ctx, float *out, int64_t ldo, int64_t n, const float *y, int64_t ldy,
                       const int32_t *rows, const float *weights, int64_t r, int64_t d);

/* out(n,d) of out_dtype = in(n,d) of in_dtype; F32 <-> BF16: round to nearest even, subnormals rounded (not
 * flushed), a NaN keeps its sign and upper payload and is made quiet. */
int32_t mk_convert(mk_context *ctx, void *out, int32_t out_dtype, int64_t ldo, const void *in, int32_t in_dtype,
                   int64_t ldi, int64_t n, int64_t d);

#ifdef __cplusplus
}
#endif
#endif
