/* AVX512-BF16 tiles of the BF16 x BF16 matmul: VDPBF16PS multiplies 32 BF16 pairs per instruction, each
 * product exact, and adds them into 16 F32 lanes (round to nearest even; BF16 subnormal inputs and F32
 * subnormal results are flushed to zero, whatever MXCSR says). Only this file and avx512_bf16_mla.c are compiled
 * with -mavx512bf16: a context whose CPU lacks it never calls in here (context.c), and no other AVX-512 kernel
 * can pick up a BF16 instruction by accident.
 *
 * Reduction order of out[t][o], the same in every tile shape: one 16-lane F32 accumulator, started at +0;
 * for each full 32-element chunk of k one VDPBF16PS (lane i takes elements 2i and 2i+1 of the chunk); the
 * tail (k mod 32) as one more VDPBF16PS on masked loads (the zeros add +0); then one fixed-tree horizontal
 * sum (hsum16, or hsum16x16 for a whole 4 x 4 tile: the same tree, avx512_math.h). A tile of MR x NR only runs MR·NR such chains side by side, so a row's bits are the same in
 * the GEMV (n < 4) or the GEMM tiles, first or last tile, on one thread or many. */
#include "mk_internal.h"

#include <immintrin.h>

#include "avx512_math.h"

#define INLINE static inline __attribute__((always_inline))

INLINE __mmask32 mask32(int64_t remaining) {
  return remaining >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << remaining) - 1);
}

/* acc[i] += x[2i]·w[2i] + x[2i+1]·w[2i+1] (VDPBF16PS). The intrinsic, not inline assembly as for dpbusd in
 * avx512_kernels.c: here GCC 12 ties the accumulator itself, and an asm statement made it move accumulators
 * between registers inside the GEMM loop. */
INLINE __m512 dpbf16(__m512 acc, __m512i x, __m512i w) {
  return _mm512_dpbf16_ps(acc, (__m512bh)x, (__m512bh)w);
}

/* out[t*ldo + o] = dot(x row t, w row o) for t < MR, o < NR: each weight chunk loaded once per tile and
 * used by MR rows; each activation chunk by NR weight rows. Full chunks with plain loads, then the masked tail
 * (no mask in the hot loop). */
INLINE void tile_bf16(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w, int64_t ldw,
                      const int MR, const int NR, int64_t k) {
  __m512 acc[4][4];
  for (int t = 0; t < MR; t++)
    for (int o = 0; o < NR; o++) acc[t][o] = _mm512_setzero_ps();
#define BF16_STEP(LOAD)                                                                                      \
  do {                                                                                                       \
    __m512i xv[4];                                                                                           \
    for (int t = 0; t < MR; t++) xv[t] = LOAD(x + t * ldx + j);                                              \
    if (NR == 1) __builtin_prefetch((const char *)(w + j) + MK_STREAM_AHEAD, 0, 3);                          \
    for (int o = 0; o < NR; o++) {                                                                           \
      __m512i wv = LOAD(w + o * ldw + j);                                                                    \
      for (int t = 0; t < MR; t++) acc[t][o] = dpbf16(acc[t][o], xv[t], wv);                                 \
    }                                                                                                        \
  } while (0)
#define FULL(p) _mm512_loadu_si512(p)
#define TAIL(p) _mm512_maskz_loadu_epi16(tail, p)
  int64_t j = 0;
  for (; j + 32 <= k; j += 32) BF16_STEP(FULL);
  if (j < k) {
    __mmask32 tail = mask32(k - j);
    BF16_STEP(TAIL);
  }
#undef TAIL
#undef FULL
#undef BF16_STEP
  for (int t = 0; t < MR; t++)
    for (int o = 0; o < NR; o++) out[t * ldo + o] = hsum16(acc[t][o]);
}

/* The GEMM tiles, 4 activation rows x 4 or 6 weight rows: per 32-element chunk 4 + NR loads feed 4·NR VDPBF16PS. The
 * same chains as tile_bf16(4, NR), in named accumulators (GCC moved an array of them through spare registers every
 * step). These cores issue under one 512-bit load a cycle and two VDPBF16PS, so the loop is held by its loads:
 * 6 weight rows give 2.4 dot products a load where 4 give 2 (from L1, 230 against 210 G multiply-adds a second). */
#define BF16_DOT(o, LOAD)                                                                                    \
  do {                                                                                                       \
    __m512i wv = LOAD(w + o * ldw + j);                                                                      \
    c0##o = dpbf16(c0##o, x0, wv);                                                                           \
    c1##o = dpbf16(c1##o, x1, wv);                                                                           \
    c2##o = dpbf16(c2##o, x2, wv);                                                                           \
    c3##o = dpbf16(c3##o, x3, wv);                                                                           \
  } while (0)
#define BF16_X(LOAD) \
  __m512i x0 = LOAD(x + j), x1 = LOAD(x + ldx + j), x2 = LOAD(x + 2 * ldx + j), x3 = LOAD(x + 3 * ldx + j)
#define BF16_ZERO(o) __m512 c0##o = _mm512_setzero_ps(), c1##o = c0##o, c2##o = c0##o, c3##o = c0##o;
#define BF16_FULL(p) _mm512_loadu_si512(p)
#define BF16_TAIL(p) _mm512_maskz_loadu_epi16(tail, p)
/* Runs STEP over k: full chunks with plain loads, then the masked tail (no mask in the hot loop). */
#define BF16_K_LOOP(STEP)                                                                                    \
  int64_t j = 0;                                                                                             \
  for (; j + 32 <= k; j += 32) STEP(BF16_FULL);                                                              \
  if (j < k) {                                                                                               \
    __mmask32 tail = mask32(k - j);                                                                          \
    STEP(BF16_TAIL);                                                                                         \
  }

/* Stores lane 4t + o of sums, t < 4 and o < nr, at out[t * ldo + o]. */
INLINE void store_4xnr(float *out, int64_t ldo, __m512 sums, int nr) {
  __mmask8 cols = (__mmask8)((1u << nr) - 1);
  for (int t = 0; t < 4; t++) _mm_mask_storeu_ps(out + t * ldo, cols, _mm512_extractf32x4_ps(sums, t));
}

static void gemm_bf16_4x4(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w, int64_t ldw,
                          int64_t k) {
  BF16_ZERO(0) BF16_ZERO(1) BF16_ZERO(2) BF16_ZERO(3)
#define STEP(LOAD)                                                                                           \
  do {                                                                                                       \
    BF16_X(LOAD);                                                                                            \
    BF16_DOT(0, LOAD); BF16_DOT(1, LOAD); BF16_DOT(2, LOAD); BF16_DOT(3, LOAD);                              \
  } while (0)
  BF16_K_LOOP(STEP)
#undef STEP
  store_4xnr(out, ldo, hsum16x16(c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33), 4);
}

static void gemm_bf16_4x6(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w, int64_t ldw,
                          int64_t k) {
  BF16_ZERO(0) BF16_ZERO(1) BF16_ZERO(2) BF16_ZERO(3) BF16_ZERO(4) BF16_ZERO(5)
#define STEP(LOAD)                                                                                           \
  do {                                                                                                       \
    BF16_X(LOAD);                                                                                            \
    BF16_DOT(0, LOAD); BF16_DOT(1, LOAD); BF16_DOT(2, LOAD); BF16_DOT(3, LOAD); BF16_DOT(4, LOAD);           \
    BF16_DOT(5, LOAD);                                                                                       \
  } while (0)
  BF16_K_LOOP(STEP)
#undef STEP
  store_4xnr(out, ldo, hsum16x16(c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33), 4);
  /* columns 4 and 5 through the same tree, each pair of chains twice */
  store_4xnr(out + 4, ldo, hsum16x16(c04, c05, c04, c05, c14, c15, c14, c15, c24, c25, c24, c25, c34, c35, c34, c35), 2);
}
#undef BF16_K_LOOP
#undef BF16_TAIL
#undef BF16_FULL
#undef BF16_ZERO
#undef BF16_X
#undef BF16_DOT

/* One weight row's chain against one activation row (tile_bf16's 1 x 1, without its horizontal sum). */
INLINE __m512 gemv_chain(const uint16_t *x, const uint16_t *w, int64_t k) {
  __m512 acc = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 32 <= k; j += 32) {
    __builtin_prefetch((const char *)(w + j) + MK_STREAM_AHEAD, 0, 3);
    acc = dpbf16(acc, _mm512_loadu_si512(x + j), _mm512_loadu_si512(w + j));
  }
  if (j < k) {
    __mmask32 tail = mask32(k - j);
    acc = dpbf16(acc, _mm512_maskz_loadu_epi16(tail, x + j), _mm512_maskz_loadu_epi16(tail, w + j));
  }
  return acc;
}

/* mk_isa.gemv_bf16_rows: 16 weight rows in turn (one sequential stream), their 16 sums by one hsum16x16, whose
 * lane 4h + r is row 4h + r: a horizontal sum and a store per row cost a fifth of a 2 KiB row's time. */
void mk_avx512_gemv_bf16_rows(float *out, const uint16_t *x, const uint16_t *w, int64_t ldw, int64_t k) {
#define CHAIN(o) __m512 a##o = gemv_chain(x, w + o * ldw, k);
  CHAIN(0) CHAIN(1) CHAIN(2) CHAIN(3) CHAIN(4) CHAIN(5) CHAIN(6) CHAIN(7)
  CHAIN(8) CHAIN(9) CHAIN(10) CHAIN(11) CHAIN(12) CHAIN(13) CHAIN(14) CHAIN(15)
#undef CHAIN
  _mm512_storeu_ps(out, hsum16x16(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15));
}

/* mk_isa.matmul_bf16_tile of the AVX-512 table (declared in mk_internal.h). Every shape up to 4 x 4 gets its own
 * unrolled tile: (4, 6) is the GEMM tile, (n, 1) for n < 4 the GEMV's one-weight-row stream, the rest (4 x 4
 * among them) edges of a thread's range of weight rows. */
void mk_avx512_matmul_bf16_tile(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w,
                             int64_t ldw, int64_t mr, int64_t nr, int64_t k) {
#define SHAPE(M, N) \
  case (M) * 8 + (N): tile_bf16(out, ldo, x, ldx, w, ldw, M, N, k); return;
#define ROW(M) SHAPE(M, 1) SHAPE(M, 2) SHAPE(M, 3) SHAPE(M, 4)
  switch (mr * 8 + nr) {
    case 4 * 8 + 4: gemm_bf16_4x4(out, ldo, x, ldx, w, ldw, k); return;
    case 4 * 8 + 6: gemm_bf16_4x6(out, ldo, x, ldx, w, ldw, k); return;
    ROW(1) ROW(2) ROW(3) SHAPE(4, 1) SHAPE(4, 2) SHAPE(4, 3)
    default: /* larger tiles are split into 4 x 4 pieces: the same chains */
      for (int64_t t = 0; t < mr; t += 4)
        for (int64_t o = 0; o < nr; o += 4)
          mk_avx512_matmul_bf16_tile(out + t * ldo + o, ldo, x + t * ldx, ldx, w + o * ldw, ldw,
                                     mr - t < 4 ? mr - t : 4, nr - o < 4 ? nr - o : 4, k);
  }
#undef ROW
#undef SHAPE
}

/* ---- matmul_heads_km on BF16: outputs across the lanes ----
 *
 * The absorbed MLA's W_UK has k = 64: as dot products, every output would pay a horizontal sum of its 16 lanes for
 * two VDPBF16PS. Here the lanes are 16 outputs: a unit's weights (k, m) are interleaved into column pairs (wt[j] lane
 * o = (w[2j][o], w[2j + 1][o])), each token's pair j is broadcast from its row into VDPBF16PS, and an output's lane
 * adds its pairs in column order (an odd k's last column pairs with 0) — the same order for any token, batch or unit,
 * so a row's bits never depend on the others. */

/* Columns 2c and 2c + 1 of a BF16 row as one 32-bit pair (a row may be only 2-byte aligned). */
INLINE int32_t column_pair(const uint16_t *row, int64_t c) {
  int32_t pair;
  memcpy(&pair, row + 2 * c, 4);
  return pair;
}

/* TN (1 to 8) tokens x 32 outputs: 2·TN chains; per pair 2 loads of wt and TN broadcasts, one per token. Tokens past
 * TN are compiled out: aliased to the last token they had cost a lone decode token 8 tokens' dot products. */
INLINE void heads_bf16_tokens(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, int64_t m, int64_t k,
                              const uint32_t *wt, const int TN) {
  int64_t full = k / 2;
  __mmask16 lo = (__mmask16)(m >= 16 ? 0xFFFF : (1u << m) - 1), hi = (__mmask16)(m >= 32 ? 0xFFFF : m > 16 ? (1u << (m - 16)) - 1 : 0);
#define ROW(i) const uint16_t *x##i = x + (i < TN ? i : 0) * ldx;
  ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5) ROW(6) ROW(7)
#undef ROW
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  __m512 b0 = a0, b1 = a0, b2 = a0, b3 = a0, b4 = a0, b5 = a0, b6 = a0, b7 = a0;
  for (int64_t j = 0; j < full; j++) {
    __m512i w0 = _mm512_loadu_si512(wt + j * 32), w1 = _mm512_loadu_si512(wt + j * 32 + 16);
#define DOT(i) if (i < TN) { __m512i xv = _mm512_set1_epi32(column_pair(x##i, j)); a##i = dpbf16(a##i, w0, xv), b##i = dpbf16(b##i, w1, xv); }
    DOT(0) DOT(1) DOT(2) DOT(3) DOT(4) DOT(5) DOT(6) DOT(7)
#undef DOT
  }
  if (k % 2) { /* the last column alone: the token's pair is (x[k - 1], 0), never the value past its row */
    __m512i w0 = _mm512_loadu_si512(wt + full * 32), w1 = _mm512_loadu_si512(wt + full * 32 + 16);
#define LAST(i) if (i < TN) { __m512i xv = _mm512_set1_epi32(x##i[k - 1]); a##i = dpbf16(a##i, w0, xv), b##i = dpbf16(b##i, w1, xv); }
    LAST(0) LAST(1) LAST(2) LAST(3) LAST(4) LAST(5) LAST(6) LAST(7)
#undef LAST
  }
#define STORE(i) if (i < TN) _mm512_mask_storeu_ps(out + i * ldo, lo, a##i), _mm512_mask_storeu_ps(out + i * ldo + 16, hi, b##i);
  STORE(0) STORE(1) STORE(2) STORE(3) STORE(4) STORE(5) STORE(6) STORE(7)
#undef STORE
}

/* wt[j * 32 + o] = (w[2j][o], w[2j + 1][o]) for o < m <= 32 (0 past m), j < (k + 1) / 2, from w (k, m) at row
 * stride ldw: two rows' 32 values interleaved by two permutes, no transpose. An odd k's last pair is (w[k - 1][o], 0). */
static void interleave_pairs(uint32_t *wt, const uint16_t *w, int64_t ldw, int64_t m, int64_t k) {
  const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8,
                                      39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
  __mmask32 cols = mask32(m);
  for (int64_t j = 0; 2 * j < k; j++) {
    __m512i a = _mm512_maskz_loadu_epi16(cols, w + 2 * j * ldw);
    __m512i b = 2 * j + 1 < k ? _mm512_maskz_loadu_epi16(cols, w + (2 * j + 1) * ldw) : _mm512_setzero_si512();
    _mm512_storeu_si512(wt + j * 32, _mm512_permutex2var_epi16(a, lo, b));
    _mm512_storeu_si512(wt + j * 32 + 16, _mm512_permutex2var_epi16(a, hi, b));
  }
}

/* mk_isa.heads_km_bf16_pairs (mk_internal.h): a unit's tokens 8 at a time against its pairs wt. */
void mk_avx512_heads_km_bf16_pairs(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, int64_t n, int64_t m,
                                   int64_t k, const uint32_t *wt) {
  for (int64_t t0 = 0; t0 < n; t0 += 8) {
    float *o = out + t0 * ldo;
    const uint16_t *xt = x + t0 * ldx;
    switch (n - t0 < 8 ? n - t0 : 8) {
      case 1: heads_bf16_tokens(o, ldo, xt, ldx, m, k, wt, 1); break;
      case 2: heads_bf16_tokens(o, ldo, xt, ldx, m, k, wt, 2); break;
      case 3: heads_bf16_tokens(o, ldo, xt, ldx, m, k, wt, 3); break;
      case 4: heads_bf16_tokens(o, ldo, xt, ldx, m, k, wt, 4); break;
      case 5: heads_bf16_tokens(o, ldo, xt, ldx, m, k, wt, 5); break;
      case 6: heads_bf16_tokens(o, ldo, xt, ldx, m, k, wt, 6); break;
      case 7: heads_bf16_tokens(o, ldo, xt, ldx, m, k, wt, 7); break;
      default: heads_bf16_tokens(o, ldo, xt, ldx, m, k, wt, 8); break;
    }
  }
}

/* mk_isa.heads_km_bf16_unit (mk_internal.h): the unit's pairs, then its tokens 8 at a time. */
void mk_avx512_heads_km_bf16_unit(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w,
                                  int64_t ldw, int64_t n, int64_t m, int64_t k, uint32_t *wt) {
  interleave_pairs(wt, w, ldw, m, k);
  mk_avx512_heads_km_bf16_pairs(out, ldo, x, ldx, n, m, k, wt);
}

/* Fourteen independent VDPBF16PS chains in registers (its latency needs 13 to keep 2 a cycle busy): 14 · 32
 * multiply-adds = 896 BF16 ops per iteration. */
double mk_avx512_bf16_peak_loop(int64_t iterations) {
  __m512 acc[14];
  __m512i a = _mm512_set1_epi16(0x3F80), b = _mm512_set1_epi16(0x3C00); /* 1.0, 2^-7 */
  for (int c = 0; c < 14; c++) acc[c] = _mm512_set1_ps((float)c);
  for (int64_t i = 0; i < iterations; i++) {
    for (int c = 0; c < 14; c++) acc[c] = dpbf16(acc[c], a, b);
    __asm__ volatile("" : "+v"(a), "+v"(b));
  }
  __m512 total = acc[0];
  for (int c = 1; c < 14; c++) total = _mm512_add_ps(total, acc[c]);
  volatile float sink = _mm512_reduce_add_ps(total);
  (void)sink;
  return (double)iterations * 14 * 32 * 2;
}

/* ---- MLA decode on BF16 latent rows: one block of up to 16 positions for up to 4 heads per call ---- */
