/* What several AVX2 sources compute the same way (included by those only): tail masks and loads, BF16 widening, the
 * fixed horizontal-sum tree, and the softmaxes' exp2 and e^x on 8 lanes. */
#ifndef MK_AVX2_MATH_H
#define MK_AVX2_MATH_H

#include <immintrin.h>
#include <string.h>

#define MK_MATH_INLINE static inline __attribute__((always_inline))

/* Lanes [0, n) set (n clamped to [0, 8]): the mask of VMASKMOVPS, which neither reads nor faults past it. */
MK_MATH_INLINE __m256i mask8(int64_t n) {
  static const int32_t ones_then_zeros[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  n = n < 0 ? 0 : n > 8 ? 8 : n;
  return _mm256_loadu_si256((const __m256i *)(ones_then_zeros + 8 - n));
}

MK_MATH_INLINE __m256 load8(const float *p, int64_t n) {
  return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask8(n));
}

MK_MATH_INLINE void store8(float *p, __m256 v, int64_t n) {
  if (n >= 8) _mm256_storeu_ps(p, v);
  else _mm256_maskstore_ps(p, mask8(n), v);
}

/* 8 BF16 values (n of them, the rest zero) widened exactly to F32 by a shift. */
MK_MATH_INLINE __m256 load_bf16x8(const uint16_t *p, int64_t n) {
  __m128i h;
  if (n >= 8) h = _mm_loadu_si128((const __m128i *)p);
  else {
    uint16_t buf[8] = {0};
    memcpy(buf, p, sizeof(uint16_t) * (size_t)(n > 0 ? n : 0));
    h = _mm_loadu_si128((const __m128i *)buf);
  }
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* 16 BF16 values (n of them, the rest zero) as one 256-bit register of raw bits. */
MK_MATH_INLINE __m256i load_bf16x16_raw(const uint16_t *p, int64_t n) {
  if (n >= 16) return _mm256_loadu_si256((const __m256i *)p);
  uint16_t buf[16] = {0};
  memcpy(buf, p, sizeof(uint16_t) * (size_t)(n > 0 ? n : 0));
  return _mm256_loadu_si256((const __m256i *)buf);
}

/* The even elements (low halves of the 32-bit lanes) and the odd ones (high halves) of 16 raw BF16 values, as F32. */
MK_MATH_INLINE __m256 bf16_even(__m256i raw) { return _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16)); }
MK_MATH_INLINE __m256 bf16_odd(__m256i raw) {
  return _mm256_castsi256_ps(_mm256_and_si256(raw, _mm256_set1_epi32((int)0xFFFF0000u)));
}

/* A cache line MK_STREAM_AHEAD bytes ahead in each of four weight-row streams read side by side (the GEMVs). */
MK_MATH_INLINE void prefetch_rows4(const uint16_t *w0, const uint16_t *w1, const uint16_t *w2, const uint16_t *w3) {
  __builtin_prefetch((const char *)w0 + MK_STREAM_AHEAD, 0, 3), __builtin_prefetch((const char *)w1 + MK_STREAM_AHEAD, 0, 3);
  __builtin_prefetch((const char *)w2 + MK_STREAM_AHEAD, 0, 3), __builtin_prefetch((const char *)w3 + MK_STREAM_AHEAD, 0, 3);
}

/* The horizontal sum by one fixed tree: 128-bit halves, then elements 2 apart, then 1 apart. */
MK_MATH_INLINE float hsum8(__m256 v) {
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_movehdup_ps(c)));
}

/* The four horizontal sums of a, b, c, d (lanes 0-3), each by hsum8's tree: halves, 2 apart, 1 apart. */
MK_MATH_INLINE __m128 hsum8x4(__m256 a, __m256 b, __m256 c, __m256 d) {
  __m128 ha = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  __m128 hb = _mm_add_ps(_mm256_castps256_ps128(b), _mm256_extractf128_ps(b, 1));
  __m128 hc = _mm_add_ps(_mm256_castps256_ps128(c), _mm256_extractf128_ps(c, 1));
  __m128 hd = _mm_add_ps(_mm256_castps256_ps128(d), _mm256_extractf128_ps(d, 1));
  /* elements 2 apart: [a0 + a2, a1 + a3, b0 + b2, b1 + b3] and the same for c, d */
  __m128 ab = _mm_add_ps(_mm_movelh_ps(ha, hb), _mm_movehl_ps(hb, ha));
  __m128 cd = _mm_add_ps(_mm_movelh_ps(hc, hd), _mm_movehl_ps(hd, hc));
  /* then 1 apart: (x0 + x2) + (x1 + x3) for each */
  return _mm_add_ps(_mm_shuffle_ps(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)), _mm_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* 2^x for x <= 0 (MLA decode's weights), lane by lane the bits of mk_exp2_weight: n = rint(x), f = x - n, the same
 * degree-6 polynomial in fused multiply-adds, times 2^n (one rounding, as ldexpf); below -126 +0; NaN stays NaN. */
MK_MATH_INLINE __m256 exp2_ps(__m256 x) {
  __m256 n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 f = _mm256_sub_ps(x, n);
  __m256 p = _mm256_set1_ps(1.5594678161326619e-04f);
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3406643902351759e-03f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.6176929729930623e-03f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.5503105510137972e-02f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.4022652782887737e-01f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.9314721496802790e-01f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
  /* 2^n as a float, n clamped to [-126, 127] (lanes outside are replaced below) */
  __m256 nc = _mm256_min_ps(_mm256_max_ps(n, _mm256_set1_ps(-126.0f)), _mm256_set1_ps(127.0f));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(nc), _mm256_set1_epi32(127)), 23);
  __m256 r = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-126.0f), _CMP_LT_OQ); /* also -inf */
  r = _mm256_andnot_ps(tiny, r);
  __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  return _mm256_blendv_ps(r, x, nan);
}

/* e^x for the SiLU and the prompt attention's softmax: x·log2(e) = n + f with f in [-1/2, 1/2], 2^f by its degree-7
 * Taylor polynomial (relative error < 2e-7), times 2^n; saturates to 0 below and to infinity above. */
MK_MATH_INLINE __m256 exp_ps(__m256 x) {
  __m256 t = _mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f));
  t = _mm256_max_ps(_mm256_min_ps(t, _mm256_set1_ps(200.0f)), _mm256_set1_ps(-200.0f));
  __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 f = _mm256_sub_ps(t, n);
  __m256 p = _mm256_set1_ps(1.5252733804059841e-05f);
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.5403530393381610e-04f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3333558146428443e-03f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.6181291076284772e-03f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.5504108664821580e-02f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.4022650695910071e-01f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.9314718055994531e-01f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
  /* 2^n in two halves, each a normal float for |n| <= 200: saturates like scalef without building an exponent
   * outside [-126, 127] */
  __m256i ni = _mm256_cvtps_epi32(n), half = _mm256_srai_epi32(ni, 1);
  __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
  __m256 s2 = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, half), _mm256_set1_epi32(127)), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

#endif
