/* AVX-512 VNNI tiles of the A8W8 matmul (VPDPBUSD: unsigned x signed bytes, four products per int32 lane).
 * Integer sums are exact, so every tile shape and blocking gives the same bits; the shapes differ in how often
 * weights are read. */
#include "mk_internal.h"

#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))

INLINE __mmask64 mask64(int64_t remaining) {
  return remaining >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << remaining) - 1);
}

/* acc += u8 · s8, four products per 32-bit lane. Inline assembly because GCC 12 wraps the intrinsic in two
 * register moves per instruction (it does not tie the accumulator), which halved the GEMM's speed. */
INLINE __m512i dpbusd(__m512i acc, __m512i u8, __m512i s8) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "vm"(s8));
  return acc;
}

/* ---- u8 x i8 dot tile (VPDPBUSD) ----
 * GEMM tiles are 4 activation rows x 6 weight rows: per 64-byte step 4 + 6 loads feed 24 VPDPBUSD. A GEMV
 * (one activation row) also sums its weight rows in the same pass (the +128 correction), so weights are read
 * once; a GEMM tile gets its sums from a separate sums-only pass (MR = 0: sums_u8i8_tile for a whole tile) to keep
 * 24 accumulators in registers. */
INLINE void tile_u8i8(int32_t *acc_out, int32_t *wsum, const uint8_t *xu, int64_t ldx, const int8_t *w, int64_t ldw,
                      const int MR, const int NR, int64_t k) {
  __m512i acc[4][MK_I8_NR], sum[MK_I8_NR];
  const __m512i ones = _mm512_set1_epi8(1);
  for (int o = 0; o < NR; o++) {
    sum[o] = _mm512_setzero_si512();
    for (int t = 0; t < MR; t++) acc[t][o] = _mm512_setzero_si512();
  }
#define U8I8_STEP(M)                                                                                         \
  do {                                                                                                       \
    __m512i xv[4];                                                                                           \
    for (int t = 0; t < MR; t++) xv[t] = _mm512_maskz_loadu_epi8(M, xu + t * ldx + j);                       \
    if (NR == 1) __builtin_prefetch(w + j + MK_STREAM_AHEAD, 0, 3);                                          \
    for (int o = 0; o < NR; o++) {                                                                           \
      __m512i wv = _mm512_maskz_loadu_epi8(M, w + o * ldw + j);                                              \
      if (wsum != NULL) sum[o] = dpbusd(sum[o], ones, wv);                                      \
      for (int t = 0; t < MR; t++) acc[t][o] = dpbusd(acc[t][o], xv[t], wv);                    \
    }                                                                                                        \
  } while (0)
  int64_t j = 0;
  for (; j + 64 <= k; j += 64) U8I8_STEP(~(__mmask64)0);
  if (j < k) U8I8_STEP(mask64(k - j));
#undef U8I8_STEP
  for (int t = 0; t < MR; t++)
    for (int o = 0; o < NR; o++) acc_out[t * MK_I8_NR + o] = _mm512_reduce_add_epi32(acc[t][o]);
  if (wsum != NULL)
    for (int o = 0; o < NR; o++) wsum[o] = _mm512_reduce_add_epi32(sum[o]);
}

/* Lane i: the sum of the 16 lanes of the i-th of a, b, c, d, by one transpose tree (~3 instructions a vector
 * against ~9 for a horizontal sum each). Integer sums are exact, so the order gives the same bits. */
INLINE __m128i reduce4_epi32(__m512i a, __m512i b, __m512i c, __m512i d) {
  __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b)); /* a b a b per 128 bits */
  __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
  __m512i abcd = _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd)); /* a b c d */
  __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(abcd), _mm512_extracti64x4_epi64(abcd, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* MR (1 to 8) activation rows against one weight row, its sum fused when wsum is not null: like the GEMV, one
 * sequential weight stream read once, here for a few rows (a routed expert's share of a decode batch). Named
 * accumulators: tile_u8i8's arrays made GCC shuffle registers, 1.5x slower at 3 rows. */
INLINE void rows_u8i8(int32_t *acc_out, int64_t lda, int32_t *wsum, const uint8_t *xu, int64_t ldx, const int8_t *w,
                      int64_t k, const int MR) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, sum = a0;
#define ROW(t) if (MR > t) a##t = dpbusd(a##t, _mm512_maskz_loadu_epi8(m, xu + t * ldx + j), wv);
#define STEP(M)                                                                                              \
  do {                                                                                                       \
    __mmask64 m = (M);                                                                                       \
    __builtin_prefetch(w + j + MK_STREAM_AHEAD, 0, 3);                                                        \
    __m512i wv = _mm512_maskz_loadu_epi8(m, w + j);                                                          \
    __asm__("" : "+v"(wv)); /* one load, not a memory operand per VPDPBUSD: 1.2x at 2 rows on unaligned rows */ \
    if (wsum != NULL) sum = dpbusd(sum, ones, wv);                                                           \
    ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5) ROW(6) ROW(7)                                                  \
  } while (0)
  int64_t j = 0;
  for (; j + 64 <= k; j += 64) STEP(~(__mmask64)0);
  if (j < k) STEP(mask64(k - j));
#undef STEP
#undef ROW
  /* the MR sums and the weight row's, four at a time by one transpose tree (exact integers: any order) */
  int32_t r[8];
  _mm_storeu_si128((__m128i *)r, reduce4_epi32(a0, a1, a2, MR > 3 ? a3 : sum));
  if (MR > 3) _mm_storeu_si128((__m128i *)(r + 4), reduce4_epi32(a4, a5, a6, a7));
#define ST(t) if (MR > t) acc_out[t * lda] = r[t];
  ST(0) ST(1) ST(2) ST(3) ST(4) ST(5) ST(6) ST(7)
#undef ST
  if (wsum != NULL) *wsum = MR > 3 ? _mm512_reduce_add_epi32(sum) : r[3];
}

/* nr weight rows one after another (one sequential stream), each against the same MR activation rows. */
INLINE void rows_u8i8_each(int32_t *acc, int32_t *wsum, const uint8_t *xu, int64_t ldx, const int8_t *w, int64_t ldw,
                           int64_t nr, int64_t k, const int MR) {
  for (int64_t o = 0; o < nr; o++) rows_u8i8(acc + o, MK_I8_NR, wsum == NULL ? NULL : wsum + o, xu, ldx, w + o * ldw, k, MR);
}

/* The sums of MK_I8_NR weight rows (a GEMM tile's +128 correction) in a pass of their own, two chains a row and the
 * rows reduced four at a time: with one chain and a horizontal sum a row, VPDPBUSD's latency and the sums held this
 * pass to a tenth of a batch-32 GEMM's time. */
_Static_assert(MK_I8_NR == 6, "sums_u8i8_tile sums six rows");
INLINE void sums_u8i8_tile(int32_t *wsum, const int8_t *w, int64_t ldw, int64_t k) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
  __m512i b0 = a0, b1 = a0, b2 = a0, b3 = a0, b4 = a0, b5 = a0;
  int64_t j = 0;
#define PAIR(o) a##o = dpbusd(a##o, ones, _mm512_loadu_si512(w + o * ldw + j)), \
                b##o = dpbusd(b##o, ones, _mm512_loadu_si512(w + o * ldw + j + 64));
  for (; j + 128 <= k; j += 128) { PAIR(0) PAIR(1) PAIR(2) PAIR(3) PAIR(4) PAIR(5) }
#undef PAIR
#define LAST(o) a##o = dpbusd(a##o, ones, _mm512_maskz_loadu_epi8(m, w + o * ldw + j));
  for (; j < k; j += 64) {
    __mmask64 m = mask64(k - j);
    LAST(0) LAST(1) LAST(2) LAST(3) LAST(4) LAST(5)
  }
#undef LAST
  a0 = _mm512_add_epi32(a0, b0), a1 = _mm512_add_epi32(a1, b1), a2 = _mm512_add_epi32(a2, b2);
  a3 = _mm512_add_epi32(a3, b3), a4 = _mm512_add_epi32(a4, b4), a5 = _mm512_add_epi32(a5, b5);
  int32_t last[4];
  _mm_storeu_si128((__m128i *)wsum, reduce4_epi32(a0, a1, a2, a3));
  _mm_storeu_si128((__m128i *)last, reduce4_epi32(a4, a5, a4, a5));
  wsum[4] = last[0], wsum[5] = last[1];
}

/* The GEMM microkernel, MR (1 to 4) activation rows x 6 weight rows, with named accumulators (GCC shuffles an
 * array of them through spare registers); rows past MR are compiled out. It runs over one block of k and keeps
 * its accumulators in `lanes` (4 x 6 x 16 int32), so the caller can walk k in blocks that keep a weight tile in L1
 * across activation tiles; a partial tile of 1 to 3 rows rides along in the same pass over the weights. On the last
 * block it writes the scaled outputs (`scale`) or the bare sums (`sums`), reduced four at a time. */
INLINE void gemm_u8i8_mx6(int32_t *lanes, int init, int32_t *sums, const mk_i8_scale *scale, const uint8_t *xu,
                          int64_t ldx, const int8_t *w, int64_t ldw, int64_t k, const int MR) {
  __m512i *acc = (__m512i *)lanes;
#define Z(t, o) __m512i c##t##o = init || MR <= t ? _mm512_setzero_si512() : _mm512_load_si512(acc + t * MK_I8_NR + o);
#define ROW(t) Z(t, 0) Z(t, 1) Z(t, 2) Z(t, 3) Z(t, 4) Z(t, 5)
  ROW(0) ROW(1) ROW(2) ROW(3)
#undef ROW
#undef Z
#define DOT(o)                                                                                               \
  do {                                                                                                       \
    __m512i wv = _mm512_maskz_loadu_epi8(m, w + o * ldw + j);                                                \
    c0##o = dpbusd(c0##o, x0, wv);                                                                           \
    if (MR > 1) c1##o = dpbusd(c1##o, x1, wv);                                                               \
    if (MR > 2) c2##o = dpbusd(c2##o, x2, wv);                                                               \
    if (MR > 3) c3##o = dpbusd(c3##o, x3, wv);                                                               \
  } while (0)
#define STEP(M)                                                                                              \
  do {                                                                                                       \
    __mmask64 m = (M);                                                                                       \
    __m512i x0 = _mm512_maskz_loadu_epi8(m, xu + j), x1 = x0, x2 = x0, x3 = x0;                              \
    if (MR > 1) x1 = _mm512_maskz_loadu_epi8(m, xu + ldx + j);                                               \
    if (MR > 2) x2 = _mm512_maskz_loadu_epi8(m, xu + 2 * ldx + j);                                           \
    if (MR > 3) x3 = _mm512_maskz_loadu_epi8(m, xu + 3 * ldx + j);                                           \
    DOT(0); DOT(1); DOT(2); DOT(3); DOT(4); DOT(5);                                                          \
  } while (0)
  int64_t j = 0;
  for (; j + 64 <= k; j += 64) STEP(~(__mmask64)0);
  if (j < k) STEP(mask64(k - j));
#undef STEP
#undef DOT
  if (scale != NULL) { /* outputs scaled, a row's first four columns, then its last two paired with the next row's */
    float *out = scale->out;
    const float *xs = scale->xs, *ws = scale->ws;
    const int32_t *wsum = scale->wsum;
    const __m128i corr03 = _mm_slli_epi32(_mm_loadu_si128((const __m128i *)wsum), 7); /* 128 · wsum, wrapping */
    const __m128i corr45 = _mm_slli_epi32(_mm_setr_epi32(wsum[4], wsum[5], wsum[4], wsum[5]), 7);
    const __m128 ws03 = _mm_loadu_ps(ws), ws45 = _mm_setr_ps(ws[4], ws[5], ws[4], ws[5]);
#define ROW4(t)                                                                                              \
  if (MR > t) {                                                                                              \
    __m128i dot = _mm_sub_epi32(reduce4_epi32(c##t##0, c##t##1, c##t##2, c##t##3), corr03);                  \
    _mm_storeu_ps(out + t * scale->ldo, _mm_mul_ps(_mm_mul_ps(_mm_cvtepi32_ps(dot), _mm_set1_ps(xs[t])), ws03)); \
  }
#define PAIR(t, u)                                                                                           \
  if (MR > t) {                                                                                              \
    __m128i dot = _mm_sub_epi32(reduce4_epi32(c##t##4, c##t##5, c##u##4, c##u##5), corr45);                  \
    __m128 x = _mm_setr_ps(xs[t], xs[t], MR > u ? xs[u] : 0.0f, MR > u ? xs[u] : 0.0f);                      \
    __m128 f = _mm_mul_ps(_mm_mul_ps(_mm_cvtepi32_ps(dot), x), ws45);                                        \
    _mm_storel_pi((__m64 *)(out + t * scale->ldo + 4), f);                                                   \
    if (MR > u) _mm_storeh_pi((__m64 *)(out + u * scale->ldo + 4), f);                                       \
  }
    ROW4(0) ROW4(1) ROW4(2) ROW4(3) PAIR(0, 1) PAIR(2, 3)
#undef PAIR
#undef ROW4
    return;
  }
  if (sums != NULL) { /* sums[t * 6 + o], four at a time (rows past MR sum zeros into lanes nobody reads) */
    __m128i *s4 = (__m128i *)sums;
    _mm_storeu_si128(s4, reduce4_epi32(c00, c01, c02, c03));
    _mm_storeu_si128(s4 + 1, reduce4_epi32(c04, c05, c10, c11));
    if (MR > 1) _mm_storeu_si128(s4 + 2, reduce4_epi32(c12, c13, c14, c15));
    if (MR > 2) _mm_storeu_si128(s4 + 3, reduce4_epi32(c20, c21, c22, c23));
    if (MR > 2) _mm_storeu_si128(s4 + 4, reduce4_epi32(c24, c25, c30, c31));
    if (MR > 3) _mm_storeu_si128(s4 + 5, reduce4_epi32(c32, c33, c34, c35));
    return;
  }
#define ST(t, o) if (MR > t) _mm512_store_si512(acc + t * MK_I8_NR + o, c##t##o);
#define ROW(t) ST(t, 0) ST(t, 1) ST(t, 2) ST(t, 3) ST(t, 4) ST(t, 5)
  ROW(0) ROW(1) ROW(2) ROW(3)
#undef ROW
#undef ST
}

void mk_avx512_gemm_u8i8_tile(int32_t *lanes, int init, const mk_i8_scale *scale, const uint8_t *xu, int64_t ldx,
                              const int8_t *w, int64_t ldw, int64_t k, int64_t mr) {
  switch (mr) {
    case 1: gemm_u8i8_mx6(lanes, init, NULL, scale, xu, ldx, w, ldw, k, 1); return;
    case 2: gemm_u8i8_mx6(lanes, init, NULL, scale, xu, ldx, w, ldw, k, 2); return;
    case 3: gemm_u8i8_mx6(lanes, init, NULL, scale, xu, ldx, w, ldw, k, 3); return;
    default: gemm_u8i8_mx6(lanes, init, NULL, scale, xu, ldx, w, ldw, k, 4); return;
  }
}

void mk_avx512_dot_u8i8_tile(int32_t *acc, int32_t *wsum, const uint8_t *xu, int64_t ldx, const int8_t *w, int64_t ldw,
                             int64_t mr, int64_t nr, int64_t k) {
  if (nr == 1 && mr <= 1) { /* GEMV: one weight row, its sum fused into the same pass */
    if (mr == 1) tile_u8i8(acc, wsum, xu, ldx, w, ldw, 1, 1, k);
    else tile_u8i8(acc, wsum, xu, ldx, w, ldw, 0, 1, k);
    return;
  }
  switch (mr) { /* a few rows against each weight row in turn */
    case 2: rows_u8i8_each(acc, wsum, xu, ldx, w, ldw, nr, k, 2); return;
    case 3: rows_u8i8_each(acc, wsum, xu, ldx, w, ldw, nr, k, 3); return;
    case 4: rows_u8i8_each(acc, wsum, xu, ldx, w, ldw, nr, k, 4); return;
    case 5: rows_u8i8_each(acc, wsum, xu, ldx, w, ldw, nr, k, 5); return;
    case 6: rows_u8i8_each(acc, wsum, xu, ldx, w, ldw, nr, k, 6); return;
    case 7: rows_u8i8_each(acc, wsum, xu, ldx, w, ldw, nr, k, 7); return;
    case 8: rows_u8i8_each(acc, wsum, xu, ldx, w, ldw, nr, k, 8); return;
  }
  if (wsum != NULL) {
    if (nr == MK_I8_NR) sums_u8i8_tile(wsum, w, ldw, k);
    else for (int64_t o = 0; o < nr; o++) tile_u8i8(NULL, wsum + o, xu, ldx, w + o * ldw, ldw, 0, 1, k);
  }
  if (mr == 1 && nr == MK_I8_NR) {
    gemm_u8i8_mx6(NULL, 1, acc, NULL, xu, ldx, w, ldw, k, 1);
    return;
  }
  for (int64_t o = 0; o < nr; o++)
    for (int64_t t = 0; t < mr; t++) {
      int32_t one[MK_I8_NR];
      tile_u8i8(one, NULL, xu + t * ldx, ldx, w + o * ldw, ldw, 1, 1, k);
      acc[t * MK_I8_NR + o] = one[0];
    }
}

/* mk_isa.rows_u8i8_scaled: each weight row against the mr activation rows while it is in L1 (one sequential stream),
 * then the 16 columns' scaling in vectors: a scalar epilogue per output was a fifth of a decode expert's time with
 * its weights in cache. */
void mk_avx512_rows_u8i8_scaled(float *out, int64_t ldo, const float *xs, const float *ws, int32_t *wsum, int fresh,
                                const uint8_t *xu, int64_t ldx, const int8_t *w, int64_t ldw, int64_t mr, int64_t nr,
                                int64_t k) {
  int32_t acc[MK_I8_ROWS * 16];
  for (int64_t o = 0; o < nr; o++) {
    int32_t *s = fresh ? wsum + o : NULL;
    const int8_t *wo = w + o * ldw;
    switch (mr) {
      case 1: rows_u8i8(acc + o, 16, s, xu, ldx, wo, k, 1); break;
      case 2: rows_u8i8(acc + o, 16, s, xu, ldx, wo, k, 2); break;
      case 3: rows_u8i8(acc + o, 16, s, xu, ldx, wo, k, 3); break;
      case 4: rows_u8i8(acc + o, 16, s, xu, ldx, wo, k, 4); break;
      case 5: rows_u8i8(acc + o, 16, s, xu, ldx, wo, k, 5); break;
      case 6: rows_u8i8(acc + o, 16, s, xu, ldx, wo, k, 6); break;
      case 7: rows_u8i8(acc + o, 16, s, xu, ldx, wo, k, 7); break;
      default: rows_u8i8(acc + o, 16, s, xu, ldx, wo, k, 8); break;
    }
  }
  /* out = (float)(sum - 128 · wsum) · xs · ws, multiplied left to right as mk_i8_scale says */
  __mmask16 m = nr >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);
  __m512i corr = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(m, wsum), 7);
  __m512 wsv = _mm512_maskz_loadu_ps(m, ws);
  for (int64_t t = 0; t < mr; t++) {
    __m512i dot = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(m, acc + 16 * t), corr);
    __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(xs[t])), wsv);
    _mm512_mask_storeu_ps(out + t * ldo, m, v);
  }
}

/* Twelve independent VPDPBUSD chains in registers: 12 · 64 multiply-adds = 1536 INT8 ops per iteration. */
double mk_avx512_int8_peak_loop(int64_t iterations) {
  __m512i acc[12];
  __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (int c = 0; c < 12; c++) acc[c] = _mm512_set1_epi32(c);
  for (int64_t i = 0; i < iterations; i++) {
    for (int c = 0; c < 12; c++) acc[c] = dpbusd(acc[c], a, b);
    __asm__ volatile("" : "+v"(a), "+v"(b));
  }
  __m512i total = acc[0];
  for (int c = 1; c < 12; c++) total = _mm512_add_epi32(total, acc[c]);
  volatile int32_t sink = _mm512_reduce_add_epi32(total);
  (void)sink;
  return (double)iterations * 12 * 64 * 2;
}
