/* AVX-512 row kernels (F, BW, VL, DQ, VNNI), chosen at run time when the CPU has them; the BF16 x BF16
 * matmul tiles (AVX512-BF16) are in avx512_bf16.c.
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

/* acc += u8 · s8, four products per 32-bit lane. Inline assembly because GCC 12 wraps the intrinsic in two
 * register moves per instruction (it does not tie the accumulator), which halved the GEMM's speed. */
INLINE __m512i dpbusd(__m512i acc, __m512i u8, __m512i s8) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "vm"(s8));
  return acc;
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
    for (int o = 0; o < NR; o++) out[t * ldo + o] = _mm512_reduce_add_ps(acc[t][o]);
}

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
  if (mr == 4 && nr == 4) tile_f32(out, ldo, x, ldx, w, w_bf16, ldw, 4, 4, k);
  else if (mr == 1 && nr == 4) tile_f32(out, ldo, x, ldx, w, w_bf16, ldw, 1, 4, k);
  else {
    size_t wsize = w_bf16 ? 2 : 4;
    for (int64_t t = 0; t < mr; t++)
      for (int64_t o = 0; o < nr; o++)
        tile_f32(out + t * ldo + o, ldo, x + t * ldx, ldx, (const char *)w + (size_t)(o * ldw) * wsize, w_bf16, ldw, 1, 1, k);
  }
}

/* ---- u8 x i8 dot tile (VPDPBUSD) ----
 * GEMM tiles are 4 activation rows x 6 weight rows: per 64-byte step 4 + 6 loads feed 24 VPDPBUSD. A GEMV
 * (one activation row) also sums its weight rows in the same pass (the +128 correction), so weights are read
 * once; a GEMM tile gets its sums from a separate sums-only pass (MR = 0) to keep 24 accumulators in registers. */
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

/* MR (2 to 8) activation rows against one weight row, its sum fused when wsum is not null: like the GEMV, one
 * sequential weight stream read once, here for a few rows (a routed expert's share of a decode batch). Named
 * accumulators: tile_u8i8's arrays made GCC shuffle registers, 1.5x slower at 3 rows. */
INLINE void rows_u8i8(int32_t *acc_out, int32_t *wsum, const uint8_t *xu, int64_t ldx, const int8_t *w, int64_t k,
                      const int MR) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, sum = a0;
#define ROW(t) if (MR > t) a##t = dpbusd(a##t, _mm512_maskz_loadu_epi8(m, xu + t * ldx + j), wv);
#define STEP(M)                                                                                              \
  do {                                                                                                       \
    __mmask64 m = (M);                                                                                       \
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
#define ST(t) if (MR > t) acc_out[t * MK_I8_NR] = _mm512_reduce_add_epi32(a##t);
  ST(0) ST(1) ST(2) ST(3) ST(4) ST(5) ST(6) ST(7)
#undef ST
  if (wsum != NULL) *wsum = _mm512_reduce_add_epi32(sum);
}

/* nr weight rows one after another (one sequential stream), each against the same MR activation rows. */
INLINE void rows_u8i8_each(int32_t *acc, int32_t *wsum, const uint8_t *xu, int64_t ldx, const int8_t *w, int64_t ldw,
                           int64_t nr, int64_t k, const int MR) {
  for (int64_t o = 0; o < nr; o++) rows_u8i8(acc + o, wsum == NULL ? NULL : wsum + o, xu, ldx, w + o * ldw, k, MR);
}

/* The GEMM microkernel, MR (1 to 4) activation rows x 6 weight rows, with named accumulators (GCC shuffles an
 * array of them through spare registers); rows past MR are compiled out. It runs over one block of k and keeps
 * its accumulators in `lanes` (4 x 6 x 16 int32), so the caller can walk k in blocks that keep a weight tile in L1
 * across activation tiles; a partial tile of 1 to 3 rows rides along in the same pass over the weights. */
INLINE void gemm_u8i8_mx6(int32_t *lanes, int init, int32_t *sums, const uint8_t *xu, int64_t ldx, const int8_t *w,
                          int64_t ldw, int64_t k, const int MR) {
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
#define ST(t, o)                                                                                             \
  if (MR <= t) {                                                                                             \
  } else if (sums != NULL) sums[t * MK_I8_NR + o] = _mm512_reduce_add_epi32(c##t##o);                        \
  else _mm512_store_si512(acc + t * MK_I8_NR + o, c##t##o);
#define ROW(t) ST(t, 0) ST(t, 1) ST(t, 2) ST(t, 3) ST(t, 4) ST(t, 5)
  ROW(0) ROW(1) ROW(2) ROW(3)
#undef ROW
#undef ST
}

static void gemm_u8i8_tile(int32_t *lanes, int init, int32_t *sums, const uint8_t *xu, int64_t ldx, const int8_t *w,
                           int64_t ldw, int64_t k, int64_t mr) {
  switch (mr) {
    case 1: gemm_u8i8_mx6(lanes, init, sums, xu, ldx, w, ldw, k, 1); return;
    case 2: gemm_u8i8_mx6(lanes, init, sums, xu, ldx, w, ldw, k, 2); return;
    case 3: gemm_u8i8_mx6(lanes, init, sums, xu, ldx, w, ldw, k, 3); return;
    default: gemm_u8i8_mx6(lanes, init, sums, xu, ldx, w, ldw, k, 4); return;
  }
}

static void dot_u8i8_tile(int32_t *acc, int32_t *wsum, const uint8_t *xu, int64_t ldx, const int8_t *w, int64_t ldw,
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
    if (nr == MK_I8_NR) tile_u8i8(NULL, wsum, xu, ldx, w, ldw, 0, MK_I8_NR, k);
    else for (int64_t o = 0; o < nr; o++) tile_u8i8(NULL, wsum + o, xu, ldx, w + o * ldw, ldw, 0, 1, k);
  }
  if (mr == 1 && nr == MK_I8_NR) {
    gemm_u8i8_mx6(NULL, 1, acc, xu, ldx, w, ldw, k, 1);
    return;
  }
  for (int64_t o = 0; o < nr; o++)
    for (int64_t t = 0; t < mr; t++) {
      int32_t one[MK_I8_NR];
      tile_u8i8(one, NULL, xu + t * ldx, ldx, w + o * ldw, ldw, 1, 1, k);
      acc[t * MK_I8_NR + o] = one[0];
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

/* 2^x: x = n + f with n an integer and f in [-1/2, 1/2], 2^f by a degree-6 minimax polynomial (relative error
 * 2.6e-9 before rounding; within 1.02 ulp of exact over every float in [-126, 0]), scaled by 2^n with scalef
 * (exact, overflows to infinity). Below -126 the result would be subnormal: +0 instead. NaN stays NaN. */
INLINE __m512 exp2_ps(__m512 x) {
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

static float exp2_sum(float *s, int64_t count, float m) {
  __mmask16 k = mask16(count);
  __m512 w = exp2_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s), _mm512_set1_ps(m)));
  _mm512_mask_storeu_ps(s, k, w);
  return _mm512_reduce_add_ps(_mm512_maskz_mov_ps(k, w));
}

/* Twelve independent VPDPBUSD chains in registers: 12 · 64 multiply-adds = 1536 INT8 ops per iteration. */
static double int8_peak_loop(int64_t iterations) {
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

const mk_isa mk_isa_avx512 = {
    .id = MK_ISA_AVX512,
    .matmul_tile = matmul_tile,
    .matmul_bf16_tile = mk_avx512_matmul_bf16_tile,
    .prepare_x_bf16 = prepare_x_bf16,
    .dot_u8i8_tile = dot_u8i8_tile,
    .gemm_u8i8_tile = gemm_u8i8_tile,
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
    .mla_scores_bf16 = mk_avx512_mla_scores_bf16,
    .mla_accumulate_bf16 = mk_avx512_mla_accumulate_bf16,
    .int8_peak_loop = int8_peak_loop,
};
