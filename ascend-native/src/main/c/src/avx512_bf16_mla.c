/* MLA decode's tile kernel (mk_isa.mla_tile_bf16) on AVX512-BF16: built with -mavx512bf16 like avx512_bf16.c,
 * and called only on a CPU that has it (context.c). */
#include "mk_internal.h"

#include <immintrin.h>
#include <math.h>

#include "avx512_math.h"

#define INLINE static inline __attribute__((always_inline))

/* acc[i] += x[2i]·w[2i] + x[2i+1]·w[2i+1] (VDPBF16PS) */
INLINE __m512 dpbf16(__m512 acc, __m512i x, __m512i w) {
  return _mm512_dpbf16_ps(acc, (__m512bh)x, (__m512bh)w);
}

/* v · 2^-delta lane by lane, as mk_scale_down_pow2 (delta > 0). */
INLINE __m512 scale_down_pow2_ps(__m512 v, int32_t delta) {
  __m512i bits = _mm512_castps_si512(v), d = _mm512_set1_epi32(delta);
  __m512i exponent = _mm512_and_si512(_mm512_srli_epi32(bits, 23), _mm512_set1_epi32(0xFF));
  __m512i scaled = _mm512_sub_epi32(bits, _mm512_slli_epi32(d, 23));
  __mmask16 flush = _mm512_cmple_epi32_mask(exponent, d);
  return _mm512_castsi512_ps(_mm512_mask_and_epi32(scaled, flush, bits, _mm512_set1_epi32((int32_t)0x80000000u)));
}

/* MLA decode for a tile of 16 heads (mk_isa.mla_tile_bf16).
 *
 * Scores: head h in lane h. Each register of the tile's query holds 4 heads × 4 column pairs (lane 4j + r: head
 * 4j + g of quarter g, pair r of an 8-column step), so one 16-byte piece of a row, broadcast to all four 128-bit
 * lanes, meets 4 heads in each of 4 VDPBF16PS: 4 rows × 4 quarters make 16 chains, and a head's 4 partial sums
 * (column pairs r mod 4) add up as (r0 + r2) + (r1 + r3) in a 4 × 4 transpose, whatever lane the head has.
 * Softmax: lane-wise. Values: a pair of rows is interleaved column by column by two in-lane unpacks (shuffles across
 * 128-bit lanes cost a Zen 5 core as much as a dot product), so the outputs of a 32-column chunk lie permuted
 * (unpacklo's columns 0-3, 8-11, 16-19, 24-27, then unpackhi's) until the item's last block puts them in order. */
#define ROWS4(X) X(0) X(1) X(2) X(3)

/* lane 4j + g = Σ_r a_g[4j + r], summed (r0 + r2) + (r1 + r3) */
INLINE __m512 reduce_quarters(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
  __m512 x01 = _mm512_add_ps(_mm512_unpacklo_ps(a0, a1), _mm512_unpackhi_ps(a0, a1));
  __m512 x23 = _mm512_add_ps(_mm512_unpacklo_ps(a2, a3), _mm512_unpackhi_ps(a2, a3));
  return _mm512_add_ps(_mm512_shuffle_ps(x01, x23, _MM_SHUFFLE(1, 0, 1, 0)), _mm512_shuffle_ps(x01, x23, _MM_SHUFFLE(3, 2, 3, 2)));
}

/* s[p] = (q · run row p) · scale for the 16 rows of a run, lanes = heads; one prefetch of `ahead` per step */
static void tile_scores(__m512 *s, const uint32_t *qt, const uint16_t *run, int64_t ld, int64_t width, float scale,
                        const char *const *ahead, int64_t ahead_n) {
  int64_t steps = width / 8, tail = width % 8, k = 0;
  __mmask8 tail_mask = (__mmask8)((1u << tail) - 1);
  for (int64_t p0 = 0; p0 < 16; p0 += 4) {
    const uint16_t *r0 = run + p0 * ld, *r1 = r0 + ld, *r2 = r1 + ld, *r3 = r2 + ld;
#define ZERO(i) __m512 a##i##0 = _mm512_setzero_ps(), a##i##1 = a##i##0, a##i##2 = a##i##0, a##i##3 = a##i##0;
    ROWS4(ZERO)
#undef ZERO
#define STEP(LOAD)                                                                                           \
  do {                                                                                                       \
    const uint32_t *qs = qt + 64 * st;                                                                       \
    __m512i q0 = _mm512_loadu_si512(qs), q1 = _mm512_loadu_si512(qs + 16), q2 = _mm512_loadu_si512(qs + 32), \
            q3 = _mm512_loadu_si512(qs + 48);                                                                \
    ROWS4(LOAD)                                                                                              \
  } while (0)
#define ROW_FULL(i)                                                                                          \
  {                                                                                                          \
    __m512i b = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(r##i + 8 * st)));                  \
    a##i##0 = dpbf16(a##i##0, q0, b), a##i##1 = dpbf16(a##i##1, q1, b), a##i##2 = dpbf16(a##i##2, q2, b),    \
    a##i##3 = dpbf16(a##i##3, q3, b);                                                                        \
  }
#define ROW_TAIL(i)                                                                                          \
  {                                                                                                          \
    __m512i b = _mm512_broadcast_i32x4(_mm_maskz_loadu_epi16(tail_mask, r##i + 8 * st));                    \
    a##i##0 = dpbf16(a##i##0, q0, b), a##i##1 = dpbf16(a##i##1, q1, b), a##i##2 = dpbf16(a##i##2, q2, b),    \
    a##i##3 = dpbf16(a##i##3, q3, b);                                                                        \
  }
    int64_t st = 0;
    for (; st < steps; st++) {
      if (k < ahead_n) _mm_prefetch(ahead[k++], _MM_HINT_T0);
      STEP(ROW_FULL);
    }
    if (tail) STEP(ROW_TAIL);
#undef ROW_FULL
#undef ROW_TAIL
#undef STEP
    __m512 sc = _mm512_set1_ps(scale);
#define OUT(i) s[p0 + i] = _mm512_mul_ps(reduce_quarters(a##i##0, a##i##1, a##i##2, a##i##3), sc);
    ROWS4(OUT)
#undef OUT
  }
  while (k < ahead_n) _mm_prefetch(ahead[k++], _MM_HINT_T0);
}
#undef ROWS4

/* v · 2^-delta lane by lane, delta a vector (lanes with delta 0 unchanged), as mk_scale_down_pow2 */
INLINE __m512 scale_down_pow2_lanes(__m512 v, __m512i delta) {
  __m512i bits = _mm512_castps_si512(v);
  __m512i exponent = _mm512_and_si512(_mm512_srli_epi32(bits, 23), _mm512_set1_epi32(0xFF));
  __m512i scaled = _mm512_sub_epi32(bits, _mm512_slli_epi32(delta, 23));
  __mmask16 moved = _mm512_test_epi32_mask(delta, delta);
  __mmask16 flush = _mm512_mask_cmple_epi32_mask(moved, exponent, delta);
  scaled = _mm512_mask_mov_epi32(bits, moved, scaled);
  return _mm512_castsi512_ps(_mm512_mask_and_epi32(scaled, flush, bits, _mm512_set1_epi32((int32_t)0x80000000u)));
}

#define HEADS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
/* o[h] += Σ_j pair j's weights · rows 2j, 2j + 1, for 8 heads over the `left` (<= 32) columns at c. A whole chunk
 * (`whole`, left = 32) interleaves each pair of rows by two in-lane unpacks, its outputs permuted; rank's last
 * rank % 32 columns by a cross-lane permute, in column order, masked. */
INLINE void tile_values(float *const *o, const uint32_t *wp, const uint16_t *const *runs, int64_t ld, int64_t pairs,
                        int64_t c, int64_t left, const int whole) {
  __mmask16 k0 = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
  __mmask16 k1 = left <= 16 ? 0 : left >= 32 ? (__mmask16)0xFFFF : (__mmask16)((1u << (left - 16)) - 1);
  __mmask32 k = (__mmask32)k0 | (__mmask32)k1 << 16;
  const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37, 5,
                                      36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
#define LOAD(h)                                                                                              \
  __m512 lo##h = whole ? _mm512_loadu_ps(o[h] + c) : _mm512_maskz_loadu_ps(k0, o[h] + c),                    \
         hi##h = whole ? _mm512_loadu_ps(o[h] + c + 16) : _mm512_maskz_loadu_ps(k1, o[h] + c + 16);
  HEADS8(LOAD)
#undef LOAD
  for (int64_t j = 0; j < pairs; j++) {
    const uint16_t *ra = runs[j >> 3] + (2 * (j & 7)) * ld + c;
    __m512i vlo, vhi;
    if (whole) {
      __m512i a = _mm512_loadu_si512(ra), b = _mm512_loadu_si512(ra + ld);
      vlo = _mm512_unpacklo_epi16(a, b), vhi = _mm512_unpackhi_epi16(a, b);
    } else {
      __m512i a = _mm512_maskz_loadu_epi16(k, ra), b = _mm512_maskz_loadu_epi16(k, ra + ld);
      vlo = _mm512_permutex2var_epi16(a, lo, b), vhi = _mm512_permutex2var_epi16(a, hi, b);
    }
    const uint32_t *w = wp + 16 * j;
#define STEP(h)                                                   \
  {                                                               \
    __m512i x = _mm512_set1_epi32((int32_t)w[h]);                 \
    lo##h = dpbf16(lo##h, vlo, x), hi##h = dpbf16(hi##h, vhi, x); \
  }
    HEADS8(STEP)
#undef STEP
  }
#define STORE(h)                                                                                             \
  if (whole) _mm512_storeu_ps(o[h] + c, lo##h), _mm512_storeu_ps(o[h] + c + 16, hi##h);                      \
  else _mm512_mask_storeu_ps(o[h] + c, k0, lo##h), _mm512_mask_storeu_ps(o[h] + c + 16, k1, hi##h);
  HEADS8(STORE)
#undef STORE
}
#undef HEADS8

void mk_avx512_mla_tile_bf16(int32_t *m, float *l, float *const *o, const uint32_t *qt, const uint16_t *const *runs,
                             int64_t ld, int64_t count, int64_t width, int64_t rank, float scale,
                             const char *const *ahead, int64_t ahead_n, int last) {
  __m512 s[32];
  int64_t nruns = (count + 15) / 16, per_run = (ahead_n + nruns - 1) / nruns;
  for (int64_t r = 0; r < nruns; r++) {
    int64_t first = r * per_run, n = ahead_n - first < per_run ? ahead_n - first : per_run;
    tile_scores(s + 16 * r, qt, runs[r], ld, width, scale, ahead + first, n > 0 ? n : 0);
  }
  for (int64_t p = count; p < 16 * nruns; p++) s[p] = _mm512_set1_ps(-INFINITY);
  /* each head's block max, as mk_mla_ceiling, then mk_mla_raise lane by lane */
  __m512 top = _mm512_set1_ps(-INFINITY);
  for (int64_t p = 0; p < count; p++) top = _mm512_max_ps(top, s[p]);
  __m512 ceiling = _mm512_roundscale_ps(top, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
  __mmask16 above = _mm512_cmp_ps_mask(ceiling, _mm512_set1_ps(-0x1p30f), _CMP_GT_OQ); /* NaN: not above */
  ceiling = _mm512_min_ps(_mm512_mask_mov_ps(_mm512_set1_ps(-0x1p30f), above, ceiling), _mm512_set1_ps(0x1p30f));
  __m512i block_m = _mm512_cvtps_epi32(ceiling), old_m = _mm512_loadu_si512(m);
  __mmask16 raise = _mm512_cmpgt_epi32_mask(block_m, old_m);
  __mmask16 had = _mm512_cmpneq_epi32_mask(old_m, _mm512_set1_epi32(MK_MLA_M_NONE));
  __m512i delta = _mm512_maskz_min_epi32(raise & had, _mm512_sub_epi32(block_m, old_m), _mm512_set1_epi32(255));
  __m512i new_m = _mm512_mask_mov_epi32(old_m, raise, block_m);
  _mm512_storeu_si512(m, new_m);
  __m512 total = scale_down_pow2_lanes(_mm512_loadu_ps(l), delta);
  if (_mm512_test_epi32_mask(delta, delta)) { /* the outputs of heads whose max rose scale down with their denominators */
    int32_t d[16];
    _mm512_storeu_si512(d, delta);
    for (int h = 0; h < 16; h++)
      if (d[h] > 0)
        for (int64_t c = 0; c < rank; c += 16) {
          __mmask16 k = rank - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (rank - c)) - 1);
          _mm512_mask_storeu_ps(o[h] + c, k, scale_down_pow2_ps(_mm512_maskz_loadu_ps(k, o[h] + c), d[h]));
        }
  }
  /* the weights 2^(s - m), summed in position order; as BF16 pairs: wp[16j + h] = (w_h(2j), w_h(2j + 1)) */
  __m512 ms = _mm512_cvtepi32_ps(new_m);
  int64_t pairs = (count + 1) / 2;
  uint32_t wp[16 * 16];
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                              21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  for (int64_t j = 0; j < pairs; j++) {
    __m512 w0 = exp2_ps(_mm512_sub_ps(s[2 * j], ms)), w1 = exp2_ps(_mm512_sub_ps(s[2 * j + 1], ms));
    total = _mm512_add_ps(_mm512_add_ps(total, w0), w1);
    _mm512_storeu_si512(wp + 16 * j, _mm512_permutexvar_epi16(interleave, (__m512i)_mm512_cvtne2ps_pbh(w1, w0)));
  }
  _mm512_storeu_ps(l, total);
  int64_t full = rank / 32 * 32;
  for (int half = 0; half < 2; half++) {
    for (int64_t c = 0; c < full; c += 32) tile_values(o + 8 * half, wp + 8 * half, runs, ld, pairs, c, 32, 1);
    if (full < rank) tile_values(o + 8 * half, wp + 8 * half, runs, ld, pairs, full, rank - full, 0);
  }
  if (!last) return;
  /* the item is done: each full chunk's outputs back in column order */
  const __m512i first = _mm512_set_epi32(23, 22, 21, 20, 7, 6, 5, 4, 19, 18, 17, 16, 3, 2, 1, 0);
  const __m512i second = _mm512_add_epi32(first, _mm512_set1_epi32(8));
  for (int h = 0; h < 16; h++)
    for (int64_t c = 0; c < full; c += 32) {
      __m512 a = _mm512_loadu_ps(o[h] + c), b = _mm512_loadu_ps(o[h] + c + 16);
      _mm512_storeu_ps(o[h] + c, _mm512_permutex2var_ps(a, first, b));
      _mm512_storeu_ps(o[h] + c + 16, _mm512_permutex2var_ps(a, second, b));
    }
}
