/* AVX2 tiles of the A8W8 matmul on signed activations (mk_isa.i8_signed_x). Without VNNI a 32-byte step of one
 * (activation row, weight row) pair is VPSIGNB + VPMADDUBSW + VPMADDWD + VPADDD: |w| · sign(x, w) multiplies
 * unsigned by signed bytes, exact since a pair of products is at most 2 · 127 · 127 < 32767, then the int16 pairs
 * widen into int32 lanes. Integer sums are exact, so every tile shape and blocking gives the same bits. */
#include "mk_internal.h"

#include <immintrin.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))

/* acc + p. The add in inline assembly: GCC 12 otherwise adds into a fresh register and copies it back to the
 * accumulator each step. */
INLINE __m256i add32(__m256i acc, __m256i p) {
  __asm__("vpaddd %1, %0, %0" : "+x"(acc) : "x"(p));
  return acc;
}

/* acc += Σ x·w over 32 bytes, 8 int32 lanes; wa = |w| (shared by every activation row against w). */
INLINE __m256i dot32(__m256i acc, __m256i wa, __m256i w, __m256i x, __m256i ones) {
  return add32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(wa, _mm256_sign_epi8(x, w)), ones));
}

/* Lanes 0xff from 32 - rem on: and-ed into a weight vector loaded to end at the row's end, it keeps the rem bytes
 * not yet summed (a zero weight byte adds 0 whatever the activation byte). */
static const int8_t tail_mask[64] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                     -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};

/* Where the last k % 32 bytes are read: weights never past a row's end (rows may end at a page), so a vector that
 * ends at the row's end with the bytes already summed masked off; rows shorter than 32 bytes through a zero-padded
 * copy. Activations are padded by the caller (to_unsigned), so their 32-byte reads may run past k. */
typedef struct {
  int64_t j;    /* offset of the tail's vector in both rows */
  __m256i mask; /* and-ed into the weights */
} tail32;

INLINE tail32 tail_of(int64_t k) {
  int64_t rem = k % 32;
  tail32 t = {k >= 32 ? k - 32 : 0, _mm256_loadu_si256((const __m256i *)(tail_mask + rem))};
  return t;
}

/* A weight row's tail vector (k % 32 != 0). */
INLINE __m256i load_tail(const int8_t *w, int64_t k, tail32 t) {
  if (k >= 32) return _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(w + t.j)), t.mask);
  int8_t buf[32] = {0};
  memcpy(buf, w, (size_t)k);
  return _mm256_loadu_si256((const __m256i *)buf);
}

/* Lane i: the sum of the 8 lanes of v[i] (one hadd tree; exact integers, any order). */
INLINE __m256i reduce8(__m256i v0, __m256i v1, __m256i v2, __m256i v3, __m256i v4, __m256i v5, __m256i v6,
                       __m256i v7) {
  __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v0, v1), _mm256_hadd_epi32(v2, v3));
  __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v4, v5), _mm256_hadd_epi32(v6, v7));
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}

/* ---- a few activation rows against a stream of weight rows (GEMV, a routed expert's rows) ----
 * One weight row against MR (1 to 8) activation rows while it is in L1, its 32-byte vectors loaded once; the MR
 * accumulator vectors go to v[t * 16] unreduced, so the caller reduces 8 weight rows at a time. One or two rows
 * give each step of a loop accumulators of its own (the loop is short of independent work otherwise). */
INLINE void rows_one(__m256i *v, const int8_t *x, int64_t ldx, const int8_t *w, int64_t k, const int MR) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int U = MR == 1 ? 4 : 2; /* 32-byte steps a loop: one prefetch a cache line */
  __m256i z = _mm256_setzero_si256();
  __m256i a0 = z, a1 = z, a2 = z, a3 = z, a4 = z, a5 = z, a6 = z, a7 = z; /* rows t */
  __m256i b0 = z, b1 = z, c0 = z, d0 = z; /* odd steps of rows 0 and 1 (MR <= 2); steps 2, 3 of row 0 (MR = 1) */
#define XROW(t) _mm256_loadu_si256((const __m256i *)(x + (t) * ldx + j + off))
#define ROWS(wv, A0, A1)                                                                                       \
  do {                                                                                                         \
    __m256i wa = _mm256_abs_epi8(wv);                                                                          \
    A0 = dot32(A0, wa, wv, XROW(0), ones);                                                                     \
    if (MR > 1) A1 = dot32(A1, wa, wv, XROW(1), ones);                                                         \
    if (MR > 2) a2 = dot32(a2, wa, wv, XROW(2), ones);                                                         \
    if (MR > 3) a3 = dot32(a3, wa, wv, XROW(3), ones);                                                         \
    if (MR > 4) a4 = dot32(a4, wa, wv, XROW(4), ones);                                                         \
    if (MR > 5) a5 = dot32(a5, wa, wv, XROW(5), ones);                                                         \
    if (MR > 6) a6 = dot32(a6, wa, wv, XROW(6), ones);                                                         \
    if (MR > 7) a7 = dot32(a7, wa, wv, XROW(7), ones);                                                         \
  } while (0)
  int64_t j = 0;
  for (; j + 32 * U <= k; j += 32 * U) {
    __builtin_prefetch(w + j + MK_STREAM_AHEAD, 0, 3);
    if (U == 4) __builtin_prefetch(w + j + 64 + MK_STREAM_AHEAD, 0, 3);
    {
      const int64_t off = 0;
      ROWS(_mm256_loadu_si256((const __m256i *)(w + j)), a0, a1);
    }
    {
      const int64_t off = 32;
      if (MR <= 2) ROWS(_mm256_loadu_si256((const __m256i *)(w + j + 32)), b0, b1);
      else ROWS(_mm256_loadu_si256((const __m256i *)(w + j + 32)), a0, a1);
    }
    if (U > 2) {
      const int64_t off = 64;
      ROWS(_mm256_loadu_si256((const __m256i *)(w + j + 64)), c0, a1);
    }
    if (U > 3) {
      const int64_t off = 96;
      ROWS(_mm256_loadu_si256((const __m256i *)(w + j + 96)), d0, a1);
    }
  }
  for (const int64_t off = 0; j + 32 <= k; j += 32) ROWS(_mm256_loadu_si256((const __m256i *)(w + j)), a0, a1);
  if (j < k) {
    tail32 tl = tail_of(k);
    const int64_t off = 0;
    j = tl.j;
    ROWS(load_tail(w, k, tl), a0, a1);
  }
#undef ROWS
#undef XROW
  v[0] = _mm256_add_epi32(_mm256_add_epi32(a0, b0), _mm256_add_epi32(c0, d0));
  if (MR > 1) v[16] = _mm256_add_epi32(a1, b1);
  if (MR > 2) v[32] = a2;
  if (MR > 3) v[48] = a3;
  if (MR > 4) v[64] = a4;
  if (MR > 5) v[80] = a5;
  if (MR > 6) v[96] = a6;
  if (MR > 7) v[112] = a7;
}

/* One activation row against 4 weight rows side by side (v[0..3]): four streams in flight where one row at a time
 * keeps one, which is what a Zen 3 core needs to read a GEMV near the bandwidth of memory. Exact integer sums: the
 * same totals as rows_one's. */
INLINE void rows_four(__m256i *v, const int8_t *x, const int8_t *w, int64_t ldw, int64_t k) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int8_t *w0 = w, *w1 = w + ldw, *w2 = w + 2 * ldw, *w3 = w + 3 * ldw;
  __m256i z = _mm256_setzero_si256(), a0 = z, a1 = z, a2 = z, a3 = z;
#define ROW4(i, WV)                                                                                          \
  {                                                                                                          \
    __m256i wv = WV;                                                                                         \
    a##i = dot32(a##i, _mm256_abs_epi8(wv), wv, xv, ones);                                                   \
  }
  int64_t j = 0;
  for (; j + 32 <= k; j += 32) {
    if ((j & 63) == 0) { /* the next 4 rows at this column: a stream's own bytes ahead may lie in a row read now */
      const int8_t *next = w0 + 4 * ldw + j;
      __builtin_prefetch(next, 0, 3), __builtin_prefetch(next + ldw, 0, 3);
      __builtin_prefetch(next + 2 * ldw, 0, 3), __builtin_prefetch(next + 3 * ldw, 0, 3);
    }
    __m256i xv = _mm256_loadu_si256((const __m256i *)(x + j));
    ROW4(0, _mm256_loadu_si256((const __m256i *)(w0 + j))) ROW4(1, _mm256_loadu_si256((const __m256i *)(w1 + j)))
    ROW4(2, _mm256_loadu_si256((const __m256i *)(w2 + j))) ROW4(3, _mm256_loadu_si256((const __m256i *)(w3 + j)))
  }
  if (j < k) {
    tail32 tl = tail_of(k);
    j = tl.j;
    __m256i xv = _mm256_loadu_si256((const __m256i *)(x + j));
    ROW4(0, load_tail(w0, k, tl)) ROW4(1, load_tail(w1, k, tl)) ROW4(2, load_tail(w2, k, tl)) ROW4(3, load_tail(w3, k, tl))
  }
#undef ROW4
  v[0] = a0, v[1] = a1, v[2] = a2, v[3] = a3;
}

INLINE void rows_each(__m256i *v, const int8_t *x, int64_t ldx, const int8_t *w, int64_t ldw, int64_t nr, int64_t k,
                      const int MR) {
  int64_t o = 0;
  if (MR == 1)
    for (; o + 4 <= nr; o += 4) rows_four(v + o, x, w + o * ldw, ldw, k);
  for (; o < nr; o++) rows_one(v + o, x, ldx, w + o * ldw, k, MR);
}

/* The first cnt (up to 8) lanes set. */
INLINE __m256i first_lanes(int64_t cnt) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)cnt), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* out[o] = (float)dot[o] · xs · ws[o], multiplied left to right as the scalar spec, for the first `lanes` lanes
 * (neither ws nor out is read or written past them). Masked moves only for a part of 8: a masked store is ~40 µops
 * on Zen 3 (llvm-mca), a plain one 1. */
INLINE void scale_store8(float *out, __m256i dot, float xs, const float *ws, int64_t lanes) {
  __m256i keep = first_lanes(lanes);
  __m256 ws8 = lanes >= 8 ? _mm256_loadu_ps(ws) : _mm256_maskload_ps(ws, keep);
  __m256 f = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(xs)), ws8);
  if (lanes >= 8) _mm256_storeu_ps(out, f);
  else _mm256_maskstore_ps(out, keep, f);
}

/* mk_isa.rows_u8i8_scaled: nr (1 to 16) weight rows one after another, a single sequential stream prefetched
 * MK_STREAM_AHEAD bytes ahead, each against the mr activation rows while it is in L1; then each activation row's
 * 16 accumulators reduced 8 at a time, the reduced vector scaled and stored as it stands. */
void mk_avx2_rows_u8i8_scaled(float *out, int64_t ldo, const float *xs, const float *ws, int32_t *wsum, int fresh,
                              const uint8_t *xq, int64_t ldx, const int8_t *w, int64_t ldw, int64_t mr, int64_t nr,
                              int64_t k) {
  (void)wsum, (void)fresh;
  const int8_t *x = (const int8_t *)xq;
  __m256i v[MK_I8_ROWS * 16]; /* v[t * 16 + o] */
  switch (mr) {
    case 1: rows_each(v, x, ldx, w, ldw, nr, k, 1); break;
    case 2: rows_each(v, x, ldx, w, ldw, nr, k, 2); break;
    case 3: rows_each(v, x, ldx, w, ldw, nr, k, 3); break;
    case 4: rows_each(v, x, ldx, w, ldw, nr, k, 4); break;
    case 5: rows_each(v, x, ldx, w, ldw, nr, k, 5); break;
    case 6: rows_each(v, x, ldx, w, ldw, nr, k, 6); break;
    case 7: rows_each(v, x, ldx, w, ldw, nr, k, 7); break;
    default: rows_each(v, x, ldx, w, ldw, nr, k, 8); break;
  }
  int64_t padded = (nr + 7) & ~(int64_t)7;
  for (int64_t t = 0; t < mr; t++)
    for (int64_t o = nr; o < padded; o++) v[t * 16 + o] = _mm256_setzero_si256();
  for (int64_t o = 0; o < nr; o += 8)
    for (int64_t t = 0; t < mr; t++) {
      const __m256i *r = v + t * 16 + o;
      scale_store8(out + t * ldo + o, reduce8(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]), xs[t], ws + o, nr - o);
    }
}

/* ---- the GEMM microkernel: mr (1 to 3) activation rows x 6 weight rows over one block of k ----
 * The sign form pays VPSIGNB on a multiply port for every (x, w) pair; a GEMM reuses each weight row for every
 * activation tile, so its block is widened to int16 once (widen_i8_rows) and the tile is VPMADDWD + VPADDD per 16
 * columns of a pair, the activations widened as they are loaded (once per 3 weight rows). Two 3 x 3 sub-tiles, 9
 * accumulators each, over the whole block; measured against 4 x 2 sign-form sub-tiles in L1 on Zen 3: 0.75-0.79 of
 * the INT8 peak against 0.63-0.69. Products are at most 127 · 127, so int32 sums are exact. */
INLINE __m256i widened_x(const int8_t *x) { return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x)); }

INLINE void wide_sub_tile(__m256i *L, int init, const int8_t *x, int64_t ldx, const int16_t *w, int64_t ldw, int64_t k,
                          const int R) {
#define Z(t, o) __m256i c##t##o = init || R <= t ? _mm256_setzero_si256() : L[t * MK_I8_NR + o];
#define ROW(t) Z(t, 0) Z(t, 1) Z(t, 2)
  ROW(0) ROW(1) ROW(2)
#undef ROW
#undef Z
#define MAC(t, o) c##t##o = add32(c##t##o, _mm256_madd_epi16(x##t, w##o));
  for (int64_t j = 0; j < k; j += 16) {
    __m256i w0 = _mm256_load_si256((const __m256i *)(w + j)), w1 = _mm256_load_si256((const __m256i *)(w + ldw + j));
    __m256i w2 = _mm256_load_si256((const __m256i *)(w + 2 * ldw + j));
    __m256i x0 = widened_x(x + j);
    MAC(0, 0) MAC(0, 1) MAC(0, 2)
    if (R > 1) {
      __m256i x1 = widened_x(x + ldx + j);
      MAC(1, 0) MAC(1, 1) MAC(1, 2)
    }
    if (R > 2) {
      __m256i x2 = widened_x(x + 2 * ldx + j);
      MAC(2, 0) MAC(2, 1) MAC(2, 2)
    }
  }
#undef MAC
#define ST(t, o) if (R > t) L[t * MK_I8_NR + o] = c##t##o;
#define ROW(t) ST(t, 0) ST(t, 1) ST(t, 2)
  ROW(0) ROW(1) ROW(2)
#undef ROW
#undef ST
}

/* The tile's scaled outputs from its accumulators, a row's 6 columns by one reduction tree, multiplied left to right
 * as the scalar spec; loaded and stored as 4 + 2 lanes rather than masked (see scale_store8). */
INLINE void scale_tile(const __m256i *L, const mk_i8_scale *scale, int64_t mr) {
  const __m256i z = _mm256_setzero_si256();
  const float *ws = scale->ws;
  __m256 ws6 = _mm256_set_m128(_mm_castpd_ps(_mm_load_sd((const double *)(ws + 4))), _mm_loadu_ps(ws));
  for (int64_t t = 0; t < mr; t++) {
    const __m256i *r = L + t * MK_I8_NR;
    __m256 dot = _mm256_cvtepi32_ps(reduce8(r[0], r[1], r[2], r[3], r[4], r[5], z, z));
    __m256 f = _mm256_mul_ps(_mm256_mul_ps(dot, _mm256_set1_ps(scale->xs[t])), ws6);
    float *out = scale->out + t * scale->ldo;
    _mm_storeu_ps(out, _mm256_castps256_ps128(f));
    _mm_store_sd((double *)(out + 4), _mm_castps_pd(_mm256_extractf128_ps(f, 1)));
  }
}

void mk_avx2_gemm_i8_w16_tile(int32_t *lanes, int init, const mk_i8_scale *scale, const int8_t *xq, int64_t ldx,
                              const int16_t *w16, int64_t ldw16, int64_t k, int64_t mr) {
  __m256i *L = (__m256i *)lanes;
  for (int o = 0; o < MK_I8_NR; o += 3) {
    const int16_t *w = w16 + o * ldw16;
    switch (mr) {
      case 1: wide_sub_tile(L + o, init, xq, ldx, w, ldw16, k, 1); break;
      case 2: wide_sub_tile(L + o, init, xq, ldx, w, ldw16, k, 2); break;
      default: wide_sub_tile(L + o, init, xq, ldx, w, ldw16, k, 3); break;
    }
  }
  if (scale != NULL) scale_tile(L, scale, mr);
}

/* w16[r * ld16 + c] = w[r * ldw + c] for c < k, zeros from k to the next multiple of 16; never reads past a row. */
void mk_avx2_widen_i8_rows(int16_t *w16, int64_t ld16, const int8_t *w, int64_t ldw, int64_t rows, int64_t k) {
  for (int64_t r = 0; r < rows; r++) {
    const int8_t *src = w + r * ldw;
    int16_t *dst = w16 + r * ld16;
    int64_t c = 0;
    for (; c + 16 <= k; c += 16) _mm256_store_si256((__m256i *)(dst + c), widened_x(src + c));
    for (; c < k; c++) dst[c] = src[c];
    for (; c % 16 != 0; c++) dst[c] = 0;
  }
}

/* Twelve independent VPMADDUBSW + VPMADDWD + VPADDD chains in registers: 12 · 32 multiply-adds = 768 INT8 ops
 * per iteration. Inline assembly, volatile: the products of the same operands would otherwise be computed once. */
double mk_avx2_int8_peak_loop(int64_t iterations) {
  __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
  __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0, c8 = c0,
          c9 = c0, c10 = c0, c11 = c0;
#define CHAIN(ACC)                                                                                               \
  do {                                                                                                         \
    __m256i p;                                                                                                 \
    __asm__ volatile("vpmaddubsw %[b], %[a], %[p]\n\tvpmaddwd %[one], %[p], %[p]\n\tvpaddd %[p], %[c], %[c]"      \
                     : [p] "=&x"(p), [c] "+x"(ACC)                                                               \
                     : [a] "x"(a), [b] "x"(b), [one] "x"(ones));                                               \
  } while (0)
  for (int64_t i = 0; i < iterations; i++) {
    CHAIN(c0); CHAIN(c1); CHAIN(c2); CHAIN(c3); CHAIN(c4); CHAIN(c5);
    CHAIN(c6); CHAIN(c7); CHAIN(c8); CHAIN(c9); CHAIN(c10); CHAIN(c11);
    __asm__ volatile("" : "+x"(a), "+x"(b));
  }
#undef CHAIN
  __m256i t = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3)),
                               _mm256_add_epi32(_mm256_add_epi32(c4, c5), _mm256_add_epi32(c6, c7)));
  t = _mm256_add_epi32(t, _mm256_add_epi32(_mm256_add_epi32(c8, c9), _mm256_add_epi32(c10, c11)));
  volatile int32_t sink = _mm256_extract_epi32(t, 0);
  (void)sink;
  return (double)iterations * 12 * 32 * 2;
}
