/* What several AVX-512 sources compute the same way (included by those only): the softmaxes' exp2 and e^x, and
 * horizontal sums of F32 accumulators with one fixed tree (that of GCC's _mm512_reduce_add_ps): 256-bit
 * halves, 128-bit quarters, elements 2 apart, then 1 apart. Every kernel that sums a dot product's 16 lanes goes
 * through this tree, one accumulator at a time (hsum16) or a 4 x 4 tile at once (hsum16x16), so a result's bits
 * never depend on the tile it was computed in. */
#ifndef MK_AVX512_MATH_H
#define MK_AVX512_MATH_H

#include <immintrin.h>

#define MK_MATH_INLINE static inline __attribute__((always_inline))

/* The horizontal sum, written out so its tree is fixed here: halves 256 + 256, 128 + 128, then 2 + 2, 1 + 1. */
MK_MATH_INLINE float hsum16(__m512 v) {
  __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  __m128 d = _mm_add_ss(c, _mm_movehdup_ps(c));
  return _mm_cvtss_f32(d);
}

/* The 16 horizontal sums of a 4 x 4 tile in one register, lane 4h + r holding the sum of a(h)(r): 45 shuffles and adds
 * where 16 hsum16 take 128, and every sum goes through hsum16's tree (256-bit halves, 128-bit quarters, elements 2
 * apart, then 1 apart), so each is bit for bit hsum16 of its own chain. */
MK_MATH_INLINE __m512 pair_halves(__m512 a, __m512 b) { /* [a.lo256 + a.hi256, b.lo256 + b.hi256] */
  return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
}
MK_MATH_INLINE __m512 pair_quarters(__m512 a, __m512 b) { /* quarters: [a0 + a1, a2 + a3, b0 + b1, b2 + b3] */
  return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xDD));
}
MK_MATH_INLINE __m512 hsum16x16(__m512 a00, __m512 a01, __m512 a02, __m512 a03, __m512 a10, __m512 a11, __m512 a12, __m512 a13,
                        __m512 a20, __m512 a21, __m512 a22, __m512 a23, __m512 a30, __m512 a31, __m512 a32, __m512 a33) {
  /* y_h: quarter r holds 4 partial sums of a(h)(r) */
  __m512 y0 = pair_quarters(pair_halves(a00, a01), pair_halves(a02, a03));
  __m512 y1 = pair_quarters(pair_halves(a10, a11), pair_halves(a12, a13));
  __m512 y2 = pair_quarters(pair_halves(a20, a21), pair_halves(a22, a23));
  __m512 y3 = pair_quarters(pair_halves(a30, a31), pair_halves(a32, a33));
  /* z01 quarter r: [y0 e0+e2, y1 e0+e2, y0 e1+e3, y1 e1+e3]; z23 the same for y2, y3 */
  __m512 z01 = _mm512_add_ps(_mm512_unpacklo_ps(y0, y1), _mm512_unpackhi_ps(y0, y1));
  __m512 z23 = _mm512_add_ps(_mm512_unpacklo_ps(y2, y3), _mm512_unpackhi_ps(y2, y3));
  /* quarter r: [a(0)(r), a(1)(r), a(2)(r), a(3)(r)] */
  __m512 sums = _mm512_add_ps(_mm512_shuffle_ps(z01, z23, _MM_SHUFFLE(1, 0, 1, 0)),
                              _mm512_shuffle_ps(z01, z23, _MM_SHUFFLE(3, 2, 3, 2)));
  /* lane 4r + h → lane 4h + r */
  return _mm512_permutexvar_ps(_mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0), sums);
}

/* 2^x: x = n + f with n an integer and f in [-1/2, 1/2], 2^f by a degree-6 minimax polynomial (relative error
 * 2.6e-9 before rounding; within 1.02 ulp of exact over every float in [-126, 0]), scaled by 2^n with scalef
 * (exact, overflows to infinity). Below -126 the result would be subnormal: +0 instead. NaN stays NaN. */
MK_MATH_INLINE __m512 exp2_ps(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(128.0f), x); /* VMINPS returns its second operand for NaN: x */
  __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 f = _mm512_sub_ps(x, n);
  __m512 p = _mm512_set1_ps(1.5594678161326619e-04f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3406643902351759e-03f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6176929729930623e-03f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5503105510137972e-02f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022652782887737e-01f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314721496802790e-01f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-126.0f), _CMP_LT_OQ); /* also -inf, whose f is NaN */
  return _mm512_mask_mov_ps(_mm512_scalef_ps(p, n), tiny, _mm512_setzero_ps());
}

/* e^x for the SiLU and the prompt attention's softmax: x·log2(e) = n + f with f in [-1/2, 1/2], 2^f by its degree-7 Taylor polynomial
 * (relative error < 2e-7), then scaled by 2^n (scalef saturates to 0 or infinity as it should). */
MK_MATH_INLINE __m512 exp_ps(__m512 x) {
  __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f));
  t = _mm512_max_ps(_mm512_min_ps(t, _mm512_set1_ps(200.0f)), _mm512_set1_ps(-200.0f));
  __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(1.5252733804059841e-05f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.5403530393381610e-04f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443e-03f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076284772e-03f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108664821580e-02f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650695910071e-01f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718055994531e-01f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

#endif
