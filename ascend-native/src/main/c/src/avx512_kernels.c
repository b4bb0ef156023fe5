/* AVX-512 row kernels (F, BW, VL, DQ, VNNI, BF16), chosen at run time when the CPU has them.
 *
 * Reduction order is fixed per output element: one 16-lane (or 64-byte) accumulator walked over k in
 * register-sized chunks, the tail loaded under a mask, then one fixed-tree horizontal sum. Tiles of
 * several rows only run several such accumulators side by side, so a row's result is the same in a
 * GEMV or a GEMM, on one thread or many. */
#include "mk_internal.h"

#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))

INLINE __mmask16 mask16(int64_t remaining) {
  return remaining >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << remaining) - 1);
}

INLINE __mmask64 mask64(int64_t remaining) {
  return remaining >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << remaining) - 1);
}

INLINE __m512 load_bf16(__mmask16 m, const uint16_t *p) {
  __m256i h = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* ---- F32 x F32|BF16 matmul tile ---- */
INLINE void tile_f32(float *out, int64_t ldo, const float *x, int64_t ldx, const void *w, int32_t w_bf16,
                     int64_t ldw, const int MR, const int NR, int64_t k) {
  __m512 acc[4][4];
  for (int t = 0; t < MR; t++)
    for (int o = 0; o < NR; o++) acc[t][o] = _mm512_setzero_ps();
  for (int64_t j = 0; j < k; j += 16) {
    __mmask16 m = mask16(k - j);
    __m512 wv[4];
    for (int o = 0; o < NR; o++)
      wv[o] = w_bf16 ? load_bf16(m, (const uint16_t *)w + o * ldw + j) : _mm512_maskz_loadu_ps(m, (const float *)w + o * ldw + j);
    for (int t = 0; t < MR; t++) {
      __m512 xv = _mm512_maskz_loadu_ps(m, x + t * ldx + j);
      for (int o = 0; o < NR; o++) acc[t][o] = _mm512_fmadd_ps(xv, wv[o], acc[t][o]);
    }
  }
  for (int t = 0; t < MR; t++)
    for (int o = 0; o < NR; o++) out[t * ldo + o] = _mm512_reduce_add_ps(acc[t][o]);
}

static void matmul_tile(float *out, int64_t ldo, const float *x, int64_t ldx, const void *w, int32_t w_bf16,
                        int64_t ldw, int64_t mr, int64_t nr, int64_t k) {
  if (mr == 4 && nr == 4) tile_f32(out, ldo, x, ldx, w, w_bf16, ldw, 4, 4, k);
  else if (mr == 1 && nr == 4) tile_f32(out, ldo, x, ldx, w, w_bf16, ldw, 1, 4, k);
  else {
    size_t wsize = w_bf16 ? 2 : 4;
    for (int64_t t = 0; t < mr; t++)
      for (int64_t o = 0; o < nr; o++)
        tile_f32(out + t * ldo + o, ldo, x + t * ldx, ldx, (const char *)w + (size_t)(o * ldw) * wsize, w_bf16, ldw, 1, 1, k);
  }
}

/* ---- u8 x i8 dot tile (VPDPBUSD) ---- */
INLINE void tile_u8i8(int32_t *acc_out, int32_t *wsum, const uint8_t *xu, int64_t ldx, const int8_t *w, int64_t ldw,
                      const int MR, const int NR, int64_t k) {
  __m512i acc[4][4], sum[4];
  const __m512i ones = _mm512_set1_epi8(1);
  for (int o = 0; o < NR; o++) {
    sum[o] = _mm512_setzero_si512();
    for (int t = 0; t < MR; t++) acc[t][o] = _mm512_setzero_si512();
  }
  for (int64_t j = 0; j < k; j += 64) {
    __mmask64 m = mask64(k - j);
    __m512i wv[4];
    for (int o = 0; o < NR; o++) {
      wv[o] = _mm512_maskz_loadu_epi8(m, w + o * ldw + j);
      if (wsum != NULL) sum[o] = _mm512_dpbusd_epi32(sum[o], ones, wv[o]);
    }
    for (int t = 0; t < MR; t++) {
      __m512i xv = _mm512_maskz_loadu_epi8(m, xu + t * ldx + j);
      for (int o = 0; o < NR; o++) acc[t][o] = _mm512_dpbusd_epi32(acc[t][o], xv, wv[o]);
    }
  }
  for (int t = 0; t < MR; t++)
    for (int o = 0; o < NR; o++) acc_out[t * 4 + o] = _mm512_reduce_add_epi32(acc[t][o]);
  if (wsum != NULL)
    for (int o = 0; o < NR; o++) wsum[o] = _mm512_reduce_add_epi32(sum[o]);
}

static void dot_u8i8_tile(int32_t *acc, int32_t *wsum, const uint8_t *xu, int64_t ldx, const int8_t *w, int64_t ldw,
                          int64_t mr, int64_t nr, int64_t k) {
  if (mr == 4 && nr == 4) tile_u8i8(acc, wsum, xu, ldx, w, ldw, 4, 4, k);
  else if (mr == 1 && nr == 4) tile_u8i8(acc, wsum, xu, ldx, w, ldw, 1, 4, k);
  else
    for (int64_t o = 0; o < nr; o++)
      for (int64_t t = 0; t < mr; t++) {
        int32_t one;
        tile_u8i8(&one, t == 0 && wsum != NULL ? wsum + o : NULL, xu + t * ldx, ldx, w + o * ldw, ldw, 1, 1, k);
        acc[t * 4 + o] = one;
      }
}

/* ---- per-row INT8 quantization ---- */
INLINE __m512 load_row(__mmask16 m, const void *x, int32_t x_bf16, int64_t j) {
  return x_bf16 ? load_bf16(m, (const uint16_t *)x + j) : _mm512_maskz_loadu_ps(m, (const float *)x + j);
}

static void quantize_row(int8_t *q, uint8_t *xu, float *scale, const void *x, int32_t x_bf16, int64_t k) {
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
    if (xu != NULL) _mm_mask_storeu_epi8(xu + j, m, _mm_add_epi8(bytes, _mm_set1_epi8((char)128)));
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

/* e^x for the SiLU: x·log2(e) = n + f with f in [-1/2, 1/2], 2^f by its degree-7 Taylor polynomial
 * (relative error < 2e-7), then scaled by 2^n (scalef saturates to 0 or infinity as it should). */
INLINE __m512 exp_ps(__m512 x) {
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

/* Twelve independent VPDPBUSD chains in registers: 12 · 64 multiply-adds = 1536 INT8 ops per iteration. */
static double int8_peak_loop(int64_t iterations) {
  __m512i acc[12];
  __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (int c = 0; c < 12; c++) acc[c] = _mm512_set1_epi32(c);
  for (int64_t i = 0; i < iterations; i++) {
    for (int c = 0; c < 12; c++) acc[c] = _mm512_dpbusd_epi32(acc[c], a, b);
    __asm__ volatile("" : "+v"(a), "+v"(b));
  }
  __m512i total = acc[0];
  for (int c = 1; c < 12; c++) total = _mm512_add_epi32(total, acc[c]);
  volatile int32_t sink = _mm512_reduce_add_epi32(total);
  (void)sink;
  return (double)iterations * 12 * 64 * 2;
}

const mk_isa mk_isa_avx512 = {
    .id = MK_ISA_AVX512,
    .matmul_tile = matmul_tile,
    .dot_u8i8_tile = dot_u8i8_tile,
    .quantize_row = quantize_row,
    .sum_squares = sum_squares,
    .scale_mul = scale_mul,
    .silu_mul = silu_mul,
    .axpy = axpy,
    .dot_f32 = dot_f32,
    .int8_peak_loop = int8_peak_loop,
};
