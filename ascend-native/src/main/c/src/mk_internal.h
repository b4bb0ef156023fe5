/* Internal plumbing of the kernel library: the thread pool, the per-ISA row kernels, shared helpers. */
#ifndef MK_INTERNAL_H
#define MK_INTERNAL_H

#include "mesh_kernels.h"
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MK_EXPORT __attribute__((visibility("default")))

/* ---- thread pool: run fn(arg, begin, end) over [0, n) split into contiguous ranges ---- */
typedef void (*mk_range_fn)(void *arg, int64_t begin, int64_t end);
/* Splits [0, n) into a few ranges per thread whose bounds are multiples of `grain` (except the end), and runs
 * them in parallel, each on whichever thread is free to take it, when `work` (a rough cost, e.g. bytes touched)
 * is worth waking threads for. fn must compute each index the same whatever range holds it (kernels keep a
 * fixed order per row, and tile from range starts that are multiples of grain). MK_E_NOMEM when a range called
 * mk_part_nomem (its outputs are then unspecified), else MK_OK. */
int32_t mk_parallel_for(mk_context *ctx, int64_t n, int64_t grain, int64_t work, mk_range_fn fn, void *arg);
/* Called by a range that could not allocate its scratch, before it returns without doing its work: the library
 * answers MK_E_NOMEM, as the header promises, instead of ending the process. */
void mk_part_nomem(void);

/* ---- numeric helpers shared by every path ---- */
static inline float mk_bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static inline uint16_t mk_f32_to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, 4);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((bits >> 16) | 0x0040u); /* quiet NaN */
  return (uint16_t)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

float mk_fp8_e4m3_to_f32(uint8_t b);

/* AMLA's online softmax state per head (mla.c): the running max m of base-2 scores is an integer, so what was
 * summed rescales by 2^-Δ, an integer subtract on the F32 exponent. */
#define MK_MLA_M_NONE INT32_MIN /* m before a head's first position */

/* x · 2^-delta for delta >= 0; values that would turn subnormal flush to ±0 (below 2^-126 of the running max: no
 * weight in the softmax). */
static inline float mk_scale_down_pow2(float x, int32_t delta) {
  if (delta == 0) return x;
  uint32_t bits;
  memcpy(&bits, &x, 4);
  int32_t exponent = (int32_t)((bits >> 23) & 0xFF);
  bits = exponent <= delta ? (bits & 0x80000000u) : bits - ((uint32_t)delta << 23);
  memcpy(&x, &bits, 4);
  return x;
}

/* A softmax weight 2^x (x <= 0), the same bits in every backend (exp2_ps in avx512_math.h lane by lane, and the
 * Java spec's ReferenceAttention.exp2): x = n + f with n = rint(x) and f in [-1/2, 1/2], 2^f by a degree-6 minimax
 * polynomial in fused multiply-adds (within 1.02 ulp of exact on [-126, 0]), times 2^n exactly; below -126 (where
 * it would turn subnormal) +0; NaN stays NaN. Bit for bit, so a weight rounded to BF16 is the same BF16 everywhere. */
static inline float mk_exp2_weight(float x) {
  if (x < -126.0f) return 0.0f;
  float n = rintf(x), f = x - n;
  float p = 1.5594678161326619e-04f;
  p = fmaf(p, f, 1.3406643902351759e-03f);
  p = fmaf(p, f, 9.6176929729930623e-03f);
  p = fmaf(p, f, 5.5503105510137972e-02f);
  p = fmaf(p, f, 2.4022652782887737e-01f);
  p = fmaf(p, f, 6.9314721496802790e-01f);
  p = fmaf(p, f, 1.0f);
  return x != x ? x : ldexpf(p, (int)n);
}

/* A block's integer max: the ceiling of its largest base-2 score, clamped to ±2^30 (NaN: -2^30). */
static inline int32_t mk_mla_ceiling(float block_max) {
  float ceiling = ceilf(block_max);
  if (!(ceiling > -0x1p30f)) ceiling = -0x1p30f;
  if (ceiling > 0x1p30f) ceiling = 0x1p30f;
  return (int32_t)ceiling;
}

/* Raises a head's running max m to block_m if higher, scaling its denominator l; returns the Δ (<= 255) by which
 * its accumulator must scale down too (0: unchanged). */
static inline int32_t mk_mla_raise(int32_t *m, float *l, int32_t block_m) {
  int32_t delta = 0;
  if (block_m > *m) {
    if (*m != MK_MLA_M_NONE) {
      int64_t d = (int64_t)block_m - *m;
      delta = d > 255 ? 255 : (int32_t)d;
      *l = mk_scale_down_pow2(*l, delta);
    }
    *m = block_m;
  }
  return delta;
}

/* Where an A8W8 GEMM tile's totals go: out[t * ldo + o] = (float)(sum[t][o] - 128 · wsum[o]) · xs[t] · ws[o] (sums of
 * x + 128; wrapping INT32 arithmetic; multiplied left to right in F32), for the tile's rows t and its MK_I8_NR
 * columns o, each pointer at the tile's first row or column. */
typedef struct {
  float *out;
  int64_t ldo;
  const float *xs, *ws;
  const int32_t *wsum;
} mk_i8_scale;

#define MK_X_BLOCK 128 /* activation rows of a GEMM kept hot in L2 while all weight rows stream past */

/* Part `part` of `parts` of the cache lines of `rows` weight rows. Spread over the activation tiles of one weight
 * tile, it brings the next weight tile in while this one computes: waiting for each weight tile at its first
 * use cost the BF16 x BF16 GEMM a third of its time, and the F32 x BF16 GEMM a sixth. */
static inline void mk_prefetch_rows(const char *w, size_t ld_bytes, int64_t rows, size_t row_bytes, int64_t part,
                                    int64_t parts) {
  size_t lines = (row_bytes + 63) / 64, begin = lines * (size_t)part / (size_t)parts;
  size_t end = lines * (size_t)(part + 1) / (size_t)parts;
  for (int64_t r = 0; r < rows; r++)
    for (size_t l = begin; l < end; l++) __builtin_prefetch(w + (size_t)r * ld_bytes + l * 64, 0, 3);
}

/* ---- the row kernels of one instruction set; every public op is a loop over these ---- */
#define MK_I8_NR 6 /* weight rows per INT8 tile: 4 x 6 accumulators fill AVX-512's 32 registers */
/* Bytes ahead of a single weight stream (GEMV, a few rows per weight row) that its kernels prefetch: with the
 * hardware prefetcher alone the few-row A8W8 experts took 1.25x as long (4-8 KiB measured best on 512 x 1024 and
 * 1024 x 512 experts). */
#define MK_STREAM_AHEAD 6144
#define MK_I8_ROWS 8 /* activation rows per pass over one weight row */
#define MK_I8_WIDE_ROWS 3 /* activation rows of a gemm_i8_w16_tile */
#define MK_BF16_GEMV_NR 16 /* weight rows per gemv_bf16_rows call: one hsum16x16 finishes them */
#define MK_MLA_HEADS 8 /* heads per mla_scores_heads call */
#define MK_ATTENTION_ROWS 4 /* query rows of one head per unit of the prompt attention: the matmul tiles' 4 x 4 */

typedef struct mk_isa {
  int32_t id;
  /* When set, the A8W8 tiles take activations as the signed bytes xq themselves (not xu = xq + 128) and compute
   * Σ xq·w directly (AVX2: |x| · sign(w, x) by VPMADDUBSW, exact for values in [-127, 127]): rows_u8i8_scaled and
   * gemm_u8i8_tile then neither read nor write wsum, and dot_u8i8_tile is not used. */
  int32_t i8_signed_x;
  /* out[t*ldo + o] for t < mr, o < nr: dot(x row t, w row o) over k; mr, nr <= 4. w dtype F32 or BF16. */
  void (*matmul_tile)(float *out, int64_t ldo, const float *x, int64_t ldx, const void *w, int32_t w_bf16,
                      int64_t ldw, int64_t mr, int64_t nr, int64_t k);
  /* out[t*ldo + o] for t < mr, o < nr: dot(x row t, w row o) over k, both BF16, every product exact, summed
   * in F32. The same per-(t, o) steps for every mr, nr (any size; the GEMV uses (n, 1), the GEMM (4, 4)). */
  void (*matmul_bf16_tile)(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w, int64_t ldw,
                           int64_t mr, int64_t nr, int64_t k);
  /* When not null: the layout matmul_tile wants x in for BF16 weights (xp and x both length k). */
  void (*prepare_x_bf16)(float *xp, const float *x, int64_t k);
  /* Optional BF16 x BF16 GEMV of MK_BF16_GEMV_NR weight rows, one after another, against one activation row:
   * out[o] each bit for bit matmul_bf16_tile's (its own chain, the same horizontal-sum tree). */
  void (*gemv_bf16_rows)(float *out, const uint16_t *x, const uint16_t *w, int64_t ldw, int64_t k);
  /* Optional: the same for an F32 activation row (as prepare_x_bf16 left it) against BF16 weight rows, each output
   * bit for bit matmul_tile's. */
  void (*gemv_f32_bf16_rows)(float *out, const float *x, const uint16_t *w, int64_t ldw, int64_t k);
  /* Optional (NULL: F32 sums): one unit of matmul_heads_km for BF16 x and w, m <= 32 outputs of one head for all n
   * tokens: out[t * ldo + o] = Σ_c x[t][c] · w[c][o], x rows at stride ldx, w (k, m) at row stride ldw; wt: scratch of
   * 32 * ((k + 1) / 2 + 1) words. Each output adds its products pair by pair, (w[2j][o], w[2j + 1][o]), in column
   * order (VDPBF16PS), the same for any n, so a row's bits never depend on the batch. */
  void (*heads_km_bf16_unit)(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w, int64_t ldw,
                             int64_t n, int64_t m, int64_t k, uint32_t *wt);
  /* heads_km_bf16_unit on column pairs made already: wt[j * 32 + o] = (w[2j][o], w[2j + 1][o]), j < (k + 1) / 2. */
  void (*heads_km_bf16_pairs)(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, int64_t n, int64_t m, int64_t k,
                              const uint32_t *wt);
  /* acc[t*MK_I8_NR + o] = Σ xu[t][j] * w[o][j] with xu = x + 128 as unsigned bytes; mr <= MK_I8_ROWS (0: sums
   * only), nr <= MK_I8_NR. When wsum is not null it also gets wsum[o] = Σ w[o][j] (fused where it can be, so a
   * GEMV or a few rows read each weight row once). */
  void (*dot_u8i8_tile)(int32_t *acc, int32_t *wsum, const uint8_t *xu, int64_t ldx, const int8_t *w, int64_t ldw,
                        int64_t mr, int64_t nr, int64_t k);
  /* Optional (NULL: dot_u8i8_tile and a scalar epilogue): a few (mr <= MK_I8_ROWS) activation rows against nr <= 16
   * weight rows, written scaled as mk_i8_scale says: out[t * ldo + o] = (float)(Σ xu[t]·w[o] - 128 · wsum[o]) · xs[t]
   * · ws[o]. With `fresh`, wsum[o] = Σ w[o][j] is computed in the same pass; otherwise it is read. */
  void (*rows_u8i8_scaled)(float *out, int64_t ldo, const float *xs, const float *ws, int32_t *wsum, int fresh,
                           const uint8_t *xu, int64_t ldx, const int8_t *w, int64_t ldw, int64_t mr, int64_t nr,
                           int64_t k);
  /* Optional GEMM microkernel over one block of k: mr (1 to 4) x MK_I8_NR dot products carried between blocks as
   * 16 int32 lanes each in `lanes` (64-byte aligned, 4 x MK_I8_NR slots; started at zero when `init`); on the last
   * block `scale` is not null and the tile's outputs are written instead, as mk_matmul_i8 scales them. */
  void (*gemm_u8i8_tile)(int32_t *lanes, int init, const mk_i8_scale *scale, const uint8_t *xu, int64_t ldx,
                         const int8_t *w, int64_t ldw, int64_t k, int64_t mr);
  /* Optional, taken before gemm_u8i8_tile (with i8_signed_x): the GEMM microkernel on a weight block widened to int16
   * by widen_i8_rows (MK_I8_NR rows of ldw16 values, zero from k up to a multiple of 16), made once and reused by
   * every activation tile: mr (1 to MK_I8_WIDE_ROWS) signed activation rows, whose 16-byte reads may run up to 15
   * bytes past k; lanes, init and scale as gemm_u8i8_tile's. */
  void (*gemm_i8_w16_tile)(int32_t *lanes, int init, const mk_i8_scale *scale, const int8_t *xq, int64_t ldx,
                           const int16_t *w16, int64_t ldw16, int64_t k, int64_t mr);
  void (*widen_i8_rows)(int16_t *w16, int64_t ld16, const int8_t *w, int64_t ldw, int64_t rows, int64_t k);
  /* n values F32 -> BF16, each as mk_f32_to_bf16 (subnormals rounded, not flushed), and BF16 -> F32. */
  void (*f32_to_bf16)(uint16_t *out, const float *in, int64_t n);
  void (*bf16_to_f32)(float *out, const uint16_t *in, int64_t n);
  /* One row of quantize_rows; x F32 or BF16. */
  void (*quantize_row)(int8_t *q, float *scale, const void *x, int32_t x_bf16, int64_t k);
  float (*sum_squares)(const float *x, int64_t d);
  void (*scale_mul)(float *out, const float *x, float r, const float *weight, int64_t d);
  void (*silu_mul)(float *out, const float *gate, const float *up, int64_t d);
  /* out = out + w * y, rounded twice (no fused multiply-add), as the Java spec */
  void (*axpy)(float *out, float w, const float *y, int64_t d);
  float (*dot_f32)(const float *a, const float *b, int64_t d);
  /* MLA decode, one head over a block of `count` (<= 16) latent rows kv[p] = c_kv ‖ k_pe (width = rank + rope):
   * s[p] = (ql·c_kv[p] + qr·k_pe[p]) · scale, and o[0:rank] += Σ_p prob[p] · c_kv[p] in position order. */
  void (*mla_scores)(float *s, const float *ql, const float *qr, const float *kv, int64_t count, int64_t width,
                     int64_t rank, float scale);
  void (*mla_accumulate)(float *o, const float *prob, const float *kv, int64_t count, int64_t width, int64_t rank);
  /* MLA decode's softmax weights of one block: s[p] = mk_exp2_weight(s[p] - m) for p < count <= 16 (s[p] - m <= 0
   * but for NaN), bit for bit; returns their sum (portable: in position order; AVX-512: by a fixed tree). */
  float (*exp2_sum)(float *s, int64_t count, float m);
  /* Optional (NULL: mla_scores and mla_accumulate head by head): the two for hn <= MK_MLA_HEADS heads of one query row
   * at once, head h's query rows at ql + h·ldq and qr + h·ldr, its scores or weights at s + h·lds, its output at
   * o + h·ldo; each head's bits those of mla_scores and mla_accumulate, so a block's rows are read once per head tile
   * rather than once per head. */
  void (*mla_scores_heads)(float *s, int64_t lds, const float *ql, int64_t ldq, const float *qr, int64_t ldr, int64_t hn,
                           const float *kv, int64_t count, int64_t width, int64_t rank, float scale);
  void (*mla_accumulate_heads)(float *o, int64_t ldo, const float *prob, int64_t ldp, int64_t hn, const float *kv,
                               int64_t count, int64_t width, int64_t rank);
  /* Optional (NULL: the F32 ops above, on rows converted to F32): one block of MLA decode straight on BF16 latent
   * rows (c_kv ‖ k_pe, width = rank + rope) for a tile of up to 16 heads, head h in lane h.
   * - qt: the tile's BF16 queries in column pairs, 4 heads × 4 pairs a register: lane 4j + r of register 4s + g is
   *   head 4j + g's pair 4s + r (8-column step s, quarter g); zeros past width and in lanes of no head.
   * - The block's count <= 32 rows lie in runs of 16: row p at runs[p / 16] + (p % 16)·ld, every row of a run
   *   readable (zeros past count).
   * - m[h], l[h] and o[h][0:rank] are head h's running state (o a row per lane). Within a unit the kernel keeps o's
   *   full 32-column chunks in an order of its own, and puts them back in column order at the call with `last`.
   * - ahead: ahead_n cache lines to prefetch (the next block's rows), spread over the scores.
   * The scores s_p = (q_h · row p) · scale (every product exact, summed in F32), then the online softmax step of
   * mla.c's online_softmax (the same m, the same scaling of o and l, the same weights 2^(s_p - m)), then
   * o[h] += Σ_p bf16(weight_p) · c_kv_p (a BF16 query weighs the values in BF16; products exact, summed in F32). */
  void (*mla_tile_bf16)(int32_t *m, float *l, float *const *o, const uint32_t *qt, const uint16_t *const *runs,
                        int64_t ld, int64_t count, int64_t width, int64_t rank, float scale,
                        const char *const *ahead, int64_t ahead_n, int last);
  /* The prompt attention's softmax of one row (attention.c): s[0:n] = softmax(s · scale), max-subtracting, in F32
   * (portable: e^x by expf and the sum in position order; AVX-512: a polynomial and lane sums by a fixed tree). */
  void (*softmax)(float *s, int64_t n, float scale);
  /* The prompt attention's values for mr <= MK_ATTENTION_ROWS query rows, positions [from, to) of them:
   * o[r * ldo + c] (+)= Σ_{from <= p < min(to, counts[r])} w[r * ldw + p] · v[p * ldv + c] for c < d, started at zero
   * when from is 0, else added to what o holds. Each output is one chain in position order whatever the blocks, so a
   * row's bits never depend on the rows beside it (portable: axpy's two roundings; AVX-512: fused multiply-adds). */
  void (*weighted_rows)(float *o, int64_t ldo, const float *w, int64_t ldw, const float *v, int64_t ldv, int64_t mr,
                        const int64_t *counts, int64_t d, int64_t from, int64_t to);
  /* mk_argmax_rows of one row (d >= 1): the lowest index of the largest value, -1 for a NaN, +inf or only -inf. */
  int32_t (*argmax)(const float *x, int64_t d);
  /* Register-only VPDPBUSD (or portable stand-in) loop: returns int8 ops done. */
  double (*int8_peak_loop)(int64_t iterations);
  /* Register-only BF16 dot-product (VDPBF16PS, or portable F32 stand-in) loop: returns BF16 ops done. */
  double (*bf16_peak_loop)(int64_t iterations);
} mk_isa;

extern const mk_isa mk_isa_portable;
#if defined(__x86_64__)
extern const mk_isa mk_isa_avx512;
/* VDPBF16PS tiles (avx512_bf16.c and avx512_bf16_mla.c, the only files built with -mavx512bf16). */
void mk_avx512_matmul_bf16_tile(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w,
                                int64_t ldw, int64_t mr, int64_t nr, int64_t k);
void mk_avx512_gemv_bf16_rows(float *out, const uint16_t *x, const uint16_t *w, int64_t ldw, int64_t k);
void mk_avx512_heads_km_bf16_unit(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w, int64_t ldw,
                                  int64_t n, int64_t m, int64_t k, uint32_t *wt);
void mk_avx512_heads_km_bf16_pairs(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, int64_t n, int64_t m, int64_t k,
                                   const uint32_t *wt);
double mk_avx512_bf16_peak_loop(int64_t iterations);
void mk_avx512_mla_tile_bf16(int32_t *m, float *l, float *const *o, const uint32_t *qt, const uint16_t *const *runs,
                             int64_t ld, int64_t count, int64_t width, int64_t rank, float scale,
                        const char *const *ahead, int64_t ahead_n, int last);
/* The prompt attention's row kernels (avx512_attention.c): mk_isa_avx512's softmax and weighted_rows. */
void mk_avx512_softmax(float *s, int64_t n, float scale);
void mk_avx512_weighted_rows(float *o, int64_t ldo, const float *w, int64_t ldw, const float *v, int64_t ldv, int64_t mr,
                             const int64_t *counts, int64_t d, int64_t from, int64_t to);
/* VPDPBUSD tiles (avx512_int8.c): mk_isa_avx512's dot_u8i8_tile, rows_u8i8_scaled, gemm_u8i8_tile and int8_peak_loop. */
void mk_avx512_dot_u8i8_tile(int32_t *acc, int32_t *wsum, const uint8_t *xu, int64_t ldx, const int8_t *w, int64_t ldw,
                             int64_t mr, int64_t nr, int64_t k);
void mk_avx512_rows_u8i8_scaled(float *out, int64_t ldo, const float *xs, const float *ws, int32_t *wsum, int fresh,
                                const uint8_t *xu, int64_t ldx, const int8_t *w, int64_t ldw, int64_t mr, int64_t nr,
                                int64_t k);
void mk_avx512_gemm_u8i8_tile(int32_t *lanes, int init, const mk_i8_scale *scale, const uint8_t *xu, int64_t ldx,
                              const int8_t *w, int64_t ldw, int64_t k, int64_t mr);
double mk_avx512_int8_peak_loop(int64_t iterations);
#endif

#if defined(__x86_64__)
extern const mk_isa mk_isa_avx2;
/* AVX2 A8W8 tiles (avx2_int8.c), signed activations (i8_signed_x): mk_isa_avx2's rows_u8i8_scaled, gemm_i8_w16_tile,
 * widen_i8_rows and int8_peak_loop. */
void mk_avx2_rows_u8i8_scaled(float *out, int64_t ldo, const float *xs, const float *ws, int32_t *wsum, int fresh,
                              const uint8_t *xq, int64_t ldx, const int8_t *w, int64_t ldw, int64_t mr, int64_t nr,
                              int64_t k);
void mk_avx2_gemm_i8_w16_tile(int32_t *lanes, int init, const mk_i8_scale *scale, const int8_t *xq, int64_t ldx,
                              const int16_t *w16, int64_t ldw16, int64_t k, int64_t mr);
void mk_avx2_widen_i8_rows(int16_t *w16, int64_t ld16, const int8_t *w, int64_t ldw, int64_t rows, int64_t k);
double mk_avx2_int8_peak_loop(int64_t iterations);
/* AVX2 attention row kernels (avx2_attention.c): mk_isa_avx2's MLA decode ops, softmax and weighted_rows. */
void mk_avx2_mla_scores(float *s, const float *ql, const float *qr, const float *kv, int64_t count, int64_t width,
                        int64_t rank, float scale);
void mk_avx2_mla_scores_heads(float *s, int64_t lds, const float *ql, int64_t ldq, const float *qr, int64_t ldr, int64_t hn,
                              const float *kv, int64_t count, int64_t width, int64_t rank, float scale);
void mk_avx2_mla_accumulate(float *o, const float *prob, const float *kv, int64_t count, int64_t width, int64_t rank);
void mk_avx2_mla_accumulate_heads(float *o, int64_t ldo, const float *prob, int64_t ldp, int64_t hn, const float *kv,
                                  int64_t count, int64_t width, int64_t rank);
float mk_avx2_exp2_sum(float *s, int64_t count, float m);
void mk_avx2_softmax(float *s, int64_t n, float scale);
void mk_avx2_weighted_rows(float *o, int64_t ldo, const float *w, int64_t ldw, const float *v, int64_t ldv, int64_t mr,
                           const int64_t *counts, int64_t d, int64_t from, int64_t to);
/* AVX2 BF16 x BF16 tiles (avx2_bf16.c): mk_isa_avx2's matmul_bf16_tile, gemv_bf16_rows and heads_km units. */
void mk_avx2_matmul_bf16_tile(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w, int64_t ldw,
                              int64_t mr, int64_t nr, int64_t k);
void mk_avx2_gemv_bf16_rows(float *out, const uint16_t *x, const uint16_t *w, int64_t ldw, int64_t k);
void mk_avx2_heads_km_bf16_unit(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w, int64_t ldw,
                                int64_t n, int64_t m, int64_t k, uint32_t *wt);
void mk_avx2_heads_km_bf16_pairs(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, int64_t n, int64_t m, int64_t k,
                                 const uint32_t *wt);
#endif

struct mk_pool;
struct mk_context {
  const mk_isa *isa; /* a static table, or `table` below */
  mk_isa table;      /* MK_ISA_AVX512_NO_BF16: the AVX-512 table with the portable BF16 x BF16 kernel */
  int32_t threads;
  struct mk_pool *pool;
};

#endif
