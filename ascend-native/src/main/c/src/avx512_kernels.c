/* AVX-512 row kernels (F, BW, VL, DQ, VNNI), chosen at run time when the CPU has them; the INT8 tiles are in
 * avx512_int8.c, the BF16 x BF16 matmul tiles (AVX512-BF16) in avx512_bf16.c.
 *
 * Reduction order is fixed per output element: one 16-lane (or 64-byte) accumulator walked over k in
 * register-sized chunks, the tail loaded under a mask, then one fixed-tree horizontal sum. Tiles of
 * several rows only run several such accumulators side by side, so a row's result is the same in a
 * GEMV or a GEMM, on one thread or many. */
#include "mk_internal.h"

#include <immintrin.h>

#include "avx512_math.h"

#define INLINE static inline __attribute__((always_inline))

INLINE __mmask16 mask16(int64_t remaining) {
  return remaining >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << remaining) - 1);
}

INLINE __m512 load_bf16(__mmask16 m, const uint16_t *p) {
  __m256i h = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* ---- F32 x F32|BF16 matmul tile (1 x 4 and 1 x 1; 4 x 4 is tile_f32_4x4 below) ---- */
INLINE void tile_f32(float *out, int64_t ldo, const float *x, int64_t ldx, const void *w, int32_t w_bf16,
                     int64_t ldw, const int MR, const int NR, int64_t k) {
  __m512 acc[4][4];
  for (int t = 0; t < MR; t++)
    for (int o = 0; o < NR; o++) acc[t][o] = _mm512_setzero_ps();
  int64_t j = 0;
  if (w_bf16) {
    /* 32 BF16 weights per load, widened without shuffles: the low halves of the 32-bit lanes (even elements)
     * by a shift, the high halves (odd elements) by a mask; x comes pre-split to match (prepare_x_bf16). */
    const __m512i high = _mm512_set1_epi32((int)0xFFFF0000u);
    for (; j + 32 <= k; j += 32) {
      __m512 we[4], wo[4];
      for (int o = 0; o < NR; o++) {
        __m512i raw = _mm512_loadu_si512((const uint16_t *)w + o * ldw + j);
        we[o] = _mm512_castsi512_ps(_mm512_slli_epi32(raw, 16));
        wo[o] = _mm512_castsi512_ps(_mm512_and_si512(raw, high));
      }
      for (int t = 0; t < MR; t++) {
        __m512 xe = _mm512_loadu_ps(x + t * ldx + j), xo = _mm512_loadu_ps(x + t * ldx + j + 16);
        for (int o = 0; o < NR; o++) acc[t][o] = _mm512_fmadd_ps(xo, wo[o], _mm512_fmadd_ps(xe, we[o], acc[t][o]));
      }
    }
  }
  /* Full 16-wide steps with plain loads, then one masked step for the tail (a mask in the hot loop cost 4x). */
#define F32_STEP(M)                                                                                          \
  do {                                                                                                       \
    __m512 wv[4];                                                                                            \
    for (int o = 0; o < NR; o++)                                                                             \
      wv[o] = w_bf16 ? load_bf16(M, (const uint16_t *)w + o * ldw + j) : _mm512_maskz_loadu_ps(M, (const float *)w + o * ldw + j); \
    for (int t = 0; t < MR; t++) {                                                                           \
      __m512 xv = _mm512_maskz_loadu_ps(M, x + t * ldx + j);                                                 \
      for (int o = 0; o < NR; o++) acc[t][o] = _mm512_fmadd_ps(xv, wv[o], acc[t][o]);                        \
    }                                                                                                        \
  } while (0)
  for (; j + 16 <= k; j += 16) F32_STEP((__mmask16)0xFFFF);
  if (j < k) F32_STEP(mask16(k - j));
#undef F32_STEP
  for (int t = 0; t < MR; t++)
    for (int o = 0; o < NR; o++) out[t * ldo + o] = hsum16(acc[t][o]);
}

/* tile_f32(4, 4) in named accumulators, the same chains and tree: with the array, GCC stored all 16 accumulators
 * to the stack every step (half the time of an F32 GEMM, and of the prompt attention's scores). */
#define F32_ZERO(t) __m512 a##t##0 = _mm512_setzero_ps(), a##t##1 = a##t##0, a##t##2 = a##t##0, a##t##3 = a##t##0;
#define F32_FMA(t, o, X, W) a##t##o = _mm512_fmadd_ps(X, W, a##t##o)
INLINE void tile_f32_4x4(float *out, int64_t ldo, const float *x, int64_t ldx, const void *w, const int w_bf16,
                         int64_t ldw, int64_t k) {
  F32_ZERO(0) F32_ZERO(1) F32_ZERO(2) F32_ZERO(3)
  int64_t j = 0;
  if (w_bf16) { /* as tile_f32: 32 weights a load, even elements by a shift, odd ones by a mask */
    const __m512i high = _mm512_set1_epi32((int)0xFFFF0000u);
    for (; j + 32 <= k; j += 32) {
      const uint16_t *wj = (const uint16_t *)w + j;
#define WIDEN(o)                                                                 \
  __m512i raw##o = _mm512_loadu_si512(wj + o * ldw);                             \
  __m512 we##o = _mm512_castsi512_ps(_mm512_slli_epi32(raw##o, 16)),             \
         wo##o = _mm512_castsi512_ps(_mm512_and_si512(raw##o, high));
      WIDEN(0) WIDEN(1) WIDEN(2) WIDEN(3)
#undef WIDEN
#define PAIR(t, o) a##t##o = _mm512_fmadd_ps(xo, wo##o, _mm512_fmadd_ps(xe, we##o, a##t##o))
#define ROW(t)                                                                                       \
  {                                                                                                  \
    __m512 xe = _mm512_loadu_ps(x + t * ldx + j), xo = _mm512_loadu_ps(x + t * ldx + j + 16);        \
    PAIR(t, 0), PAIR(t, 1), PAIR(t, 2), PAIR(t, 3);                                                  \
  }
      ROW(0) ROW(1) ROW(2) ROW(3)
#undef ROW
#undef PAIR
    }
  }
#define LOADW(o, M) \
  w_bf16 ? load_bf16(M, (const uint16_t *)w + o * ldw + j) : _mm512_maskz_loadu_ps(M, (const float *)w + o * ldw + j)
#define ROW(t, M)                                                                                    \
  {                                                                                                  \
    __m512 xv = _mm512_maskz_loadu_ps(M, x + t * ldx + j);                                           \
    F32_FMA(t, 0, xv, w0), F32_FMA(t, 1, xv, w1), F32_FMA(t, 2, xv, w2), F32_FMA(t, 3, xv, w3);      \
  }
#define STEP(M)                                                                                      \
  {                                                                                                  \
    __m512 w0 = LOADW(0, M), w1 = LOADW(1, M), w2 = LOADW(2, M), w3 = LOADW(3, M);                   \
    ROW(0, M) ROW(1, M) ROW(2, M) ROW(3, M)                                                          \
  }
  for (; j + 16 <= k; j += 16) STEP((__mmask16)0xFFFF)
  if (j < k) STEP(mask16(k - j))
#undef STEP
#undef ROW
#undef LOADW
  __m512 sums = hsum16x16(a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23, a30, a31, a32, a33);
  for (int t = 0; t < 4; t++) _mm_storeu_ps(out + t * ldo, _mm512_extractf32x4_ps(sums, t));
}
#undef F32_FMA
#undef F32_ZERO

/* x for BF16 weights: each full 32-element chunk as its 16 even then its 16 odd elements; the tail as is. */
static void prepare_x_bf16(float *xp, const float *x, int64_t k) {
  int64_t j = 0;
  for (; j + 32 <= k; j += 32)
    for (int i = 0; i < 16; i++) {
      xp[j + i] = x[j + 2 * i];
      xp[j + 16 + i] = x[j + 2 * i + 1];
    }
  for (; j < k; j++) xp[j] = x[j];
}

static void matmul_tile(float *out, int64_t ldo, const float *x, int64_t ldx, const void *w, int32_t w_bf16,
                        int64_t ldw, int64_t mr, int64_t nr, int64_t k) {
  if (mr == 4 && nr == 4 && w_bf16) tile_f32_4x4(out, ldo, x, ldx, w, 1, ldw, k);
  else if (mr == 4 && nr == 4) tile_f32_4x4(out, ldo, x, ldx, w, 0, ldw, k);
  else if (mr == 1 && nr == 4) tile_f32(out, ldo, x, ldx, w, w_bf16, ldw, 1, 4, k);
  else {
    size_t wsize = w_bf16 ? 2 : 4;
    for (int64_t t = 0; t < mr; t++)
      for (int64_t o = 0; o < nr; o++)
        tile_f32(out + t * ldo + o, ldo, x + t * ldx, ldx, (const char *)w + (size_t)(o * ldw) * wsize, w_bf16, ldw, 1, 1, k);
  }
}

/* ---- F32 <-> BF16 ----
 * mk_f32_to_bf16 in integer lanes, not VCVTNEPS2BF16: that instruction flushes subnormal inputs to zero (and is
 * missing on MK_ISA_AVX512_NO_BF16), the scalar twin rounds them. */
INLINE __m256i f32_to_bf16_16(__m512i bits) {
  const __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000);
  __m512i high = _mm512_srli_epi32(bits, 16);
  __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
  __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7FFF)), lsb), 16);
  __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, magnitude), inf);
  rounded = _mm512_mask_or_epi32(rounded, nan, high, _mm512_set1_epi32(0x0040)); /* quiet NaN, sign kept */
  return _mm512_cvtepi32_epi16(rounded);
}

static void f32_to_bf16(uint16_t *out, const float *in, int64_t n) {
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    __m256i lo = f32_to_bf16_16(_mm512_loadu_si512(in + j)), hi = f32_to_bf16_16(_mm512_loadu_si512(in + j + 16));
    _mm512_storeu_si512(out + j, _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
  }
  for (; j < n; j += 16) {
    __mmask16 m = mask16(n - j);
    _mm256_mask_storeu_epi16(out + j, m, f32_to_bf16_16(_mm512_maskz_loadu_epi32(m, in + j)));
  }
}

static void bf16_to_f32(float *out, const uint16_t *in, int64_t n) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) _mm512_storeu_ps(out + j, load_bf16((__mmask16)0xFFFF, in + j));
  if (j < n) _mm512_mask_storeu_ps(out + j, mask16(n - j), load_bf16(mask16(n - j), in + j));
}

/* ---- per-row INT8 quantization ---- */
INLINE __m512 load_row(__mmask16 m, const void *x, int32_t x_bf16, int64_t j) {
  return x_bf16 ? load_bf16(m, (const uint16_t *)x + j) : _mm512_maskz_loadu_ps(m, (const float *)x + j);
}

static void quantize_row(int8_t *q, float *scale, const void *x, int32_t x_bf16, int64_t k) {
  __m512 amax = _mm512_setzero_ps();
  for (int64_t j = 0; j < k; j += 16) amax = _mm512_max_ps(amax, _mm512_abs_ps(load_row(mask16(k - j), x, x_bf16, j)));
  float a = _mm512_reduce_max_ps(amax);
  __m512 inv = _mm512_set1_ps(a == 0 ? 0 : 127.0f / a);
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
  for (int64_t j = 0; j < k; j += 16) {
    __mmask16 m = mask16(k - j);
    /* cvtps rounds to nearest even under the default MXCSR, as Math.rint */
    __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(load_row(m, x, x_bf16, j), inv));
    v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
    __m128i bytes = _mm512_cvtepi32_epi8(v);
    _mm_mask_storeu_epi8(q + j, m, bytes);
  }
  *scale = a / 127.0f;
}

/* ---- elementwise ---- */
static float sum_squares(const float *x, int64_t d) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t j = 0; j < d; j += 16) {
    __m512 v = _mm512_maskz_loadu_ps(mask16(d - j), x + j);
    acc = _mm512_fmadd_ps(v, v, acc);
  }
  return _mm512_reduce_add_ps(acc);
}

static void scale_mul(float *out, const float *x, float r, const float *weight, int64_t d) {
  __m512 rv = _mm512_set1_ps(r);
  for (int64_t j = 0; j < d; j += 16) {
    __mmask16 m = mask16(d - j);
    __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + j), rv), _mm512_maskz_loadu_ps(m, weight + j));
    _mm512_mask_storeu_ps(out + j, m, v);
  }
}

static void silu_mul(float *out, const float *gate, const float *up, int64_t d) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t j = 0; j < d; j += 16) {
    __mmask16 m = mask16(d - j);
    __m512 g = _mm512_maskz_loadu_ps(m, gate + j);
    __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), g))));
    _mm512_mask_storeu_ps(out + j, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + j)));
  }
}

static void axpy(float *out, float w, const float *y, int64_t d) {
  __m512 wv = _mm512_set1_ps(w);
  for (int64_t j = 0; j < d; j += 16) {
    __mmask16 m = mask16(d - j);
    __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, out + j), _mm512_mul_ps(wv, _mm512_maskz_loadu_ps(m, y + j)));
    _mm512_mask_storeu_ps(out + j, m, v);
  }
}

static float dot_f32(const float *a, const float *b, int64_t d) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t j = 0; j < d; j += 16) {
    __mmask16 m = mask16(d - j);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + j), _mm512_maskz_loadu_ps(m, b + j), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

/* MLA scores for up to 16 positions at once: one accumulator per position, each q chunk loaded once. */
static void mla_scores(float *s, const float *ql, const float *qr, const float *kv, int64_t count, int64_t width,
                       int64_t rank, float scale) {
  __m512 acc[16];
  for (int p = 0; p < 16; p++) acc[p] = _mm512_setzero_ps();
  for (int part = 0; part < 2; part++) { /* c_kv against q_latent, then k_pe against q_rope */
    const float *q = part == 0 ? ql : qr;
    int64_t base = part == 0 ? 0 : rank, len = part == 0 ? rank : width - rank;
    for (int64_t c = 0; c < len; c += 16) {
      __mmask16 m = mask16(len - c);
      __m512 qv = _mm512_maskz_loadu_ps(m, q + c);
      for (int64_t p = 0; p < count; p++)
        acc[p] = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, kv + p * width + base + c), acc[p]);
    }
  }
  for (int64_t p = 0; p < count; p++) s[p] = _mm512_reduce_add_ps(acc[p]) * scale;
}

/* o += Σ_p prob[p] · c_kv[p]: each 16-wide slice of o is loaded and stored once for the whole block. */
static void mla_accumulate(float *o, const float *prob, const float *kv, int64_t count, int64_t width, int64_t rank) {
  for (int64_t c = 0; c < rank; c += 16) {
    __mmask16 m = mask16(rank - c);
    __m512 oc = _mm512_maskz_loadu_ps(m, o + c);
    for (int64_t p = 0; p < count; p++)
      oc = _mm512_fmadd_ps(_mm512_set1_ps(prob[p]), _mm512_maskz_loadu_ps(m, kv + p * width + c), oc);
    _mm512_mask_storeu_ps(o + c, m, oc);
  }
}

static float exp2_sum(float *s, int64_t count, float m) {
  __mmask16 k = mask16(count);
  __m512 w = exp2_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s), _mm512_set1_ps(m)));
  _mm512_mask_storeu_ps(s, k, w);
  return _mm512_reduce_add_ps(_mm512_maskz_mov_ps(k, w));
}

/* Two passes: the max (and whether any lane was NaN or +inf), then the first lane equal to it; -0 equals +0, as
 * the portable loop's comparisons have it. */
static int32_t argmax(const float *x, int64_t d) {
  const __m512 none = _mm512_set1_ps(-INFINITY), inf = _mm512_set1_ps(INFINITY);
  __m512 top = none;
  __mmask16 bad = 0;
  for (int64_t j = 0; j < d; j += 16) {
    __m512 v = _mm512_mask_loadu_ps(none, mask16(d - j), x + j);
    bad |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(v, inf, _CMP_EQ_OQ);
    top = _mm512_max_ps(top, v);
  }
  float max = _mm512_reduce_max_ps(top);
  if (bad || max == -INFINITY) return -1;
  for (int64_t j = 0; j < d; j += 16) {
    __mmask16 m = mask16(d - j), hit = _mm512_mask_cmp_ps_mask(m, _mm512_maskz_loadu_ps(m, x + j), _mm512_set1_ps(max), _CMP_EQ_OQ);
    if (hit) return (int32_t)(j + __builtin_ctz(hit));
  }
  return -1; /* not reached: max is one of the values */
}

const mk_isa mk_isa_avx512 = {
    .id = MK_ISA_AVX512,
    .matmul_tile = matmul_tile,
    .matmul_bf16_tile = mk_avx512_matmul_bf16_tile,
    .prepare_x_bf16 = prepare_x_bf16,
    .dot_u8i8_tile = mk_avx512_dot_u8i8_tile,
    .rows_u8i8_scaled = mk_avx512_rows_u8i8_scaled,
    .gemm_u8i8_tile = mk_avx512_gemm_u8i8_tile,
    .f32_to_bf16 = f32_to_bf16,
    .bf16_to_f32 = bf16_to_f32,
    .quantize_row = quantize_row,
    .sum_squares = sum_squares,
    .scale_mul = scale_mul,
    .silu_mul = silu_mul,
    .axpy = axpy,
    .dot_f32 = dot_f32,
    .mla_scores = mla_scores,
    .mla_accumulate = mla_accumulate,
    .exp2_sum = exp2_sum,
    .mla_tile_bf16 = mk_avx512_mla_tile_bf16,
    .gemv_bf16_rows = mk_avx512_gemv_bf16_rows,
    .heads_km_bf16_unit = mk_avx512_heads_km_bf16_unit,
    .heads_km_bf16_pairs = mk_avx512_heads_km_bf16_pairs,
    .softmax = mk_avx512_softmax,
    .weighted_rows = mk_avx512_weighted_rows,
    .argmax = argmax,
    .int8_peak_loop = mk_avx512_int8_peak_loop,
    .bf16_peak_loop = mk_avx512_bf16_peak_loop,
};
