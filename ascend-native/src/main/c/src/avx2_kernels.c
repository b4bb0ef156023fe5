/* AVX2 + FMA row kernels (x86-64-v3: Haswell, Zen 1 and later), chosen at run time on CPUs without AVX-512; the BF16
 * tiles are in avx2_bf16.c, the INT8 tiles in avx2_int8.c.
 *
 * Reduction order is fixed per output element, as in the AVX-512 kernels: one 8-lane accumulator walked over k in
 * register-sized chunks, the tail loaded under a mask, then hsum8's fixed tree. Tiles of several rows only run
 * several such accumulators side by side, so a row's result is the same in a GEMV or a GEMM, on one thread or many.
 * Attention's row kernels are in avx2_attention.c. */
#include "mk_internal.h"

#include <immintrin.h>
#include <math.h>

#include "avx2_math.h"

#define INLINE static inline __attribute__((always_inline))

/* ---- F32 x F32|BF16 matmul tile ----
 * A chain per output: for F32 weights acc += x[j:j+8] · w[j:j+8] per 8 elements; for BF16 weights per full 16 elements
 * acc += xe · we, then acc += xo · wo (the even and odd elements, widened without shuffles; x comes pre-split to match,
 * prepare_x_bf16), the rest 8 at a time. Tiles of up to 2 x 4 outputs: 8 accumulators and the weights fit the 16
 * registers. */
INLINE void tile_f32(float *out, int64_t ldo, const float *x, int64_t ldx, const void *w, const int w_bf16, int64_t ldw,
                     const int MR, const int NR, int64_t k) {
  __m256 acc[2][4];
  for (int t = 0; t < MR; t++)
    for (int o = 0; o < NR; o++) acc[t][o] = _mm256_setzero_ps();
  int64_t j = 0;
  if (w_bf16)
    for (; j + 16 <= k; j += 16) {
      __m256 we[4], wo[4];
      for (int o = 0; o < NR; o++) {
        __m256i raw = _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + o * ldw + j));
        we[o] = bf16_even(raw), wo[o] = bf16_odd(raw);
      }
      for (int t = 0; t < MR; t++) {
        __m256 xe = _mm256_loadu_ps(x + t * ldx + j), xo = _mm256_loadu_ps(x + t * ldx + j + 8);
        for (int o = 0; o < NR; o++) acc[t][o] = _mm256_fmadd_ps(xo, wo[o], _mm256_fmadd_ps(xe, we[o], acc[t][o]));
      }
    }
  for (; j < k; j += 8) {
    __m256 wv[4];
    for (int o = 0; o < NR; o++)
      wv[o] = w_bf16 ? load_bf16x8((const uint16_t *)w + o * ldw + j, k - j) : load8((const float *)w + o * ldw + j, k - j);
    for (int t = 0; t < MR; t++) {
      __m256 xv = load8(x + t * ldx + j, k - j);
      for (int o = 0; o < NR; o++) acc[t][o] = _mm256_fmadd_ps(xv, wv[o], acc[t][o]);
    }
  }
  for (int t = 0; t < MR; t++) {
    if (NR == 4) _mm_storeu_ps(out + t * ldo, hsum8x4(acc[t][0], acc[t][1], acc[t][2], acc[t][3]));
    else
      for (int o = 0; o < NR; o++) out[t * ldo + o] = hsum8(acc[t][o]);
  }
}

/* tile_f32(2, 4) on F32 weights in named accumulators, each weight chunk loaded once for both rows (as an array GCC
 * folded the weight loads into the multiply-adds, twice each): the same chains and tree. */
INLINE void tile_f32_2x4(float *out, int64_t ldo, const float *x, int64_t ldx, const float *w, int64_t ldw, int64_t k) {
  __m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00, a13 = a00;
  const float *w0 = w, *w1 = w + ldw, *w2 = w + 2 * ldw, *w3 = w + 3 * ldw, *x0 = x, *x1 = x + ldx;
#define STEP(LOAD)                                                                                           \
  {                                                                                                          \
    __m256 v0 = LOAD(w0 + j), v1 = LOAD(w1 + j), v2 = LOAD(w2 + j), v3 = LOAD(w3 + j);                      \
    __asm__("" : "+x"(v0), "+x"(v1), "+x"(v2), "+x"(v3)); /* in registers, not folded into each FMA */     \
    __m256 p = LOAD(x0 + j), q = LOAD(x1 + j);                                                               \
    a00 = _mm256_fmadd_ps(p, v0, a00), a01 = _mm256_fmadd_ps(p, v1, a01);                                    \
    a02 = _mm256_fmadd_ps(p, v2, a02), a03 = _mm256_fmadd_ps(p, v3, a03);                                    \
    a10 = _mm256_fmadd_ps(q, v0, a10), a11 = _mm256_fmadd_ps(q, v1, a11);                                    \
    a12 = _mm256_fmadd_ps(q, v2, a12), a13 = _mm256_fmadd_ps(q, v3, a13);                                    \
  }
#define FULL(ptr) _mm256_loadu_ps(ptr)
#define TAIL(ptr) load8(ptr, k - j)
  int64_t j = 0;
  for (; j + 8 <= k; j += 8) STEP(FULL)
  if (j < k) STEP(TAIL)
#undef TAIL
#undef FULL
#undef STEP
  _mm_storeu_ps(out, hsum8x4(a00, a01, a02, a03));
  _mm_storeu_ps(out + ldo, hsum8x4(a10, a11, a12, a13));
}

/* x for BF16 weights: each full 16-element chunk as its 8 even then its 8 odd elements; the tail as is. */
static void prepare_x_bf16(float *xp, const float *x, int64_t k) {
  int64_t j = 0;
  for (; j + 16 <= k; j += 16)
    for (int i = 0; i < 8; i++) {
      xp[j + i] = x[j + 2 * i];
      xp[j + 8 + i] = x[j + 2 * i + 1];
    }
  for (; j < k; j++) xp[j] = x[j];
}

/* mk_isa.gemv_f32_bf16_rows: 16 BF16 weight rows against one prepared F32 activation row, 4 rows' chains at a time
 * (one chain's two dependent multiply-adds a chunk would hold a lone row's stream to a third of the bandwidth), each
 * row's stream prefetched ahead; every output is tile_f32's chain for it, summed by the same tree. */
static void gemv_f32_bf16_rows(float *out, const float *x, const uint16_t *w, int64_t ldw, int64_t k) {
  for (int64_t o = 0; o < MK_BF16_GEMV_NR; o += 4) {
    const uint16_t *w0 = w + o * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t j = 0;
    for (; j + 16 <= k; j += 16) {
      if ((j & 31) == 0) prefetch_rows4(w0 + j, w1 + j, w2 + j, w3 + j);
      __m256 xe = _mm256_loadu_ps(x + j), xo = _mm256_loadu_ps(x + j + 8);
#define ROW(i)                                                                                               \
  {                                                                                                          \
    __m256i raw = _mm256_loadu_si256((const __m256i *)(w##i + j));                                           \
    a##i = _mm256_fmadd_ps(xo, bf16_odd(raw), _mm256_fmadd_ps(xe, bf16_even(raw), a##i));                    \
  }
      ROW(0) ROW(1) ROW(2) ROW(3)
#undef ROW
    }
    for (; j < k; j += 8) {
      __m256 xv = load8(x + j, k - j);
      a0 = _mm256_fmadd_ps(xv, load_bf16x8(w0 + j, k - j), a0), a1 = _mm256_fmadd_ps(xv, load_bf16x8(w1 + j, k - j), a1);
      a2 = _mm256_fmadd_ps(xv, load_bf16x8(w2 + j, k - j), a2), a3 = _mm256_fmadd_ps(xv, load_bf16x8(w3 + j, k - j), a3);
    }
    _mm_storeu_ps(out + o, hsum8x4(a0, a1, a2, a3));
  }
}

static void matmul_tile(float *out, int64_t ldo, const float *x, int64_t ldx, const void *w, int32_t w_bf16,
                        int64_t ldw, int64_t mr, int64_t nr, int64_t k) {
  size_t wsize = w_bf16 ? 2 : 4;
  for (int64_t t = 0; t < mr; t += 2) {
    const float *xt = x + t * ldx;
    float *ot = out + t * ldo;
    if (mr - t >= 2 && nr == 4) { /* BF16 weights in 2 x 2 halves: their even and odd registers take twice the room */
      if (w_bf16) {
        tile_f32(ot, ldo, xt, ldx, w, 1, ldw, 2, 2, k);
        tile_f32(ot + 2, ldo, xt, ldx, (const uint16_t *)w + 2 * ldw, 1, ldw, 2, 2, k);
      } else tile_f32_2x4(ot, ldo, xt, ldx, w, ldw, k);
      continue;
    }
    if (mr - t == 1 && nr == 4 && !w_bf16) {
      tile_f32(ot, ldo, xt, ldx, w, 0, ldw, 1, 4, k);
      continue;
    }
    for (int64_t r = t; r < mr && r < t + 2; r++)
      for (int64_t o = 0; o < nr; o++) {
        const void *wo = (const char *)w + (size_t)(o * ldw) * wsize;
        if (w_bf16) tile_f32(out + r * ldo + o, ldo, x + r * ldx, ldx, wo, 1, ldw, 1, 1, k);
        else tile_f32(out + r * ldo + o, ldo, x + r * ldx, ldx, wo, 0, ldw, 1, 1, k);
      }
  }
}

/* ---- F32 <-> BF16: mk_f32_to_bf16 in integer lanes (subnormals rounded, NaN made quiet) ---- */
INLINE __m128i f32_to_bf16_8(__m256i bits) {
  __m256i high = _mm256_srli_epi32(bits, 16);
  __m256i lsb = _mm256_and_si256(high, _mm256_set1_epi32(1));
  __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7FFF)), lsb), 16);
  __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
  __m256i nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000)); /* both positive: signed compare */
  rounded = _mm256_blendv_epi8(rounded, _mm256_or_si256(high, _mm256_set1_epi32(0x0040)), nan);
  __m256i packed = _mm256_packus_epi32(rounded, rounded); /* lanes hold <= 0xFFFF: no saturation */
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, _MM_SHUFFLE(3, 1, 2, 0)));
}

static void f32_to_bf16(uint16_t *out, const float *in, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) _mm_storeu_si128((__m128i *)(out + j), f32_to_bf16_8(_mm256_loadu_si256((const __m256i *)(in + j))));
  for (; j < n; j++) out[j] = mk_f32_to_bf16(in[j]);
}

static void bf16_to_f32(float *out, const uint16_t *in, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(out + j, load_bf16x8(in + j, 8));
  for (; j < n; j++) out[j] = mk_bf16_to_f32(in[j]);
}

/* ---- per-row INT8 quantization ---- */
INLINE __m256 load_row(const void *x, int32_t x_bf16, int64_t j, int64_t n) {
  return x_bf16 ? load_bf16x8((const uint16_t *)x + j, n) : load8((const float *)x + j, n);
}

static void quantize_row(int8_t *q, float *scale, const void *x, int32_t x_bf16, int64_t k) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 amax = _mm256_setzero_ps();
  for (int64_t j = 0; j < k; j += 8) amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, load_row(x, x_bf16, j, k - j)));
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  float a = _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
  __m256 inv = _mm256_set1_ps(a == 0 ? 0 : 127.0f / a);
  const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
  for (int64_t j = 0; j < k; j += 8) {
    /* cvtps rounds to nearest even under the default MXCSR, as rintf */
    __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(load_row(x, x_bf16, j, k - j), inv));
    v = _mm256_min_epi32(_mm256_max_epi32(v, lo), hi);
    __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    __m128i bytes = _mm_packs_epi16(w16, w16);
    if (k - j >= 8) _mm_storel_epi64((__m128i *)(q + j), bytes);
    else {
      int8_t buf[16];
      _mm_storeu_si128((__m128i *)buf, bytes);
      memcpy(q + j, buf, (size_t)(k - j));
    }
  }
  *scale = a / 127.0f;
}

/* ---- elementwise ---- */
static float sum_squares(const float *x, int64_t d) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t j = 0; j < d; j += 8) {
    __m256 v = load8(x + j, d - j);
    acc = _mm256_fmadd_ps(v, v, acc);
  }
  return hsum8(acc);
}

static void scale_mul(float *out, const float *x, float r, const float *weight, int64_t d) {
  __m256 rv = _mm256_set1_ps(r);
  for (int64_t j = 0; j < d; j += 8)
    store8(out + j, _mm256_mul_ps(_mm256_mul_ps(load8(x + j, d - j), rv), load8(weight + j, d - j)), d - j);
}

static void silu_mul(float *out, const float *gate, const float *up, int64_t d) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t j = 0; j < d; j += 8) {
    __m256 g = load8(gate + j, d - j);
    __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), g))));
    store8(out + j, _mm256_mul_ps(s, load8(up + j, d - j)), d - j);
  }
}

static void axpy(float *out, float w, const float *y, int64_t d) {
  __m256 wv = _mm256_set1_ps(w);
  for (int64_t j = 0; j < d; j += 8)
    store8(out + j, _mm256_add_ps(load8(out + j, d - j), _mm256_mul_ps(wv, load8(y + j, d - j))), d - j);
}

static float dot_f32(const float *a, const float *b, int64_t d) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t j = 0; j < d; j += 8) acc = _mm256_fmadd_ps(load8(a + j, d - j), load8(b + j, d - j), acc);
  return hsum8(acc);
}

/* Two passes: the max (and whether any lane was NaN or +inf), then the first lane equal to it; -0 equals +0, as the
 * portable loop's comparisons have it. */
static int32_t argmax(const float *x, int64_t d) {
  const __m256 none = _mm256_set1_ps(-INFINITY), inf = _mm256_set1_ps(INFINITY);
  __m256 top = none, bad = _mm256_setzero_ps();
  for (int64_t j = 0; j < d; j += 8) {
    __m256 v = _mm256_blendv_ps(none, load8(x + j, d - j), _mm256_castsi256_ps(mask8(d - j)));
    bad = _mm256_or_ps(bad, _mm256_or_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), _mm256_cmp_ps(v, inf, _CMP_EQ_OQ)));
    top = _mm256_max_ps(top, v);
  }
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(top), _mm256_extractf128_ps(top, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  float max = _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
  if (_mm256_movemask_ps(bad) || max == -INFINITY) return -1;
  __m256 mv = _mm256_set1_ps(max);
  for (int64_t j = 0; j < d; j += 8) {
    int hit = _mm256_movemask_ps(_mm256_cmp_ps(load8(x + j, d - j), mv, _CMP_EQ_OQ)) & ((1 << (d - j < 8 ? d - j : 8)) - 1);
    if (hit) return (int32_t)(j + __builtin_ctz((unsigned)hit));
  }
  return -1; /* not reached: max is one of the values */
}

/* Twelve independent FMA chains in registers, the rate of the BF16 kernels here (a BF16 multiply-add is an F32 FMA
 * lane after a shift): 12 · 8 multiply-adds = 192 ops per iteration. */
static double bf16_peak_loop(int64_t iterations) {
  __m256 acc[12];
  __m256 a = _mm256_set1_ps(1.0f), b = _mm256_set1_ps(0x1p-7f);
  for (int c = 0; c < 12; c++) acc[c] = _mm256_set1_ps((float)c);
  for (int64_t i = 0; i < iterations; i++) {
    for (int c = 0; c < 12; c++) acc[c] = _mm256_fmadd_ps(a, b, acc[c]);
    __asm__ volatile("" : "+x"(a), "+x"(b));
  }
  __m256 total = acc[0];
  for (int c = 1; c < 12; c++) total = _mm256_add_ps(total, acc[c]);
  volatile float sink = hsum8(total);
  (void)sink;
  return (double)iterations * 12 * 8 * 2;
}

const mk_isa mk_isa_avx2 = {
    .id = MK_ISA_AVX2,
    .i8_signed_x = 1,
    .matmul_tile = matmul_tile,
    .matmul_bf16_tile = mk_avx2_matmul_bf16_tile,
    .prepare_x_bf16 = prepare_x_bf16,
    .gemv_bf16_rows = mk_avx2_gemv_bf16_rows,
    .gemv_f32_bf16_rows = gemv_f32_bf16_rows,
    .heads_km_bf16_unit = mk_avx2_heads_km_bf16_unit,
    .heads_km_bf16_pairs = mk_avx2_heads_km_bf16_pairs,
    .rows_u8i8_scaled = mk_avx2_rows_u8i8_scaled,
    .gemm_i8_w16_tile = mk_avx2_gemm_i8_w16_tile,
    .widen_i8_rows = mk_avx2_widen_i8_rows,
    .f32_to_bf16 = f32_to_bf16,
    .bf16_to_f32 = bf16_to_f32,
    .quantize_row = quantize_row,
    .sum_squares = sum_squares,
    .scale_mul = scale_mul,
    .silu_mul = silu_mul,
    .axpy = axpy,
    .dot_f32 = dot_f32,
    .mla_scores = mk_avx2_mla_scores,
    .mla_accumulate = mk_avx2_mla_accumulate,
    .exp2_sum = mk_avx2_exp2_sum,
    .mla_scores_heads = mk_avx2_mla_scores_heads,
    .mla_accumulate_heads = mk_avx2_mla_accumulate_heads,
    .softmax = mk_avx2_softmax,
    .weighted_rows = mk_avx2_weighted_rows,
    .argmax = argmax,
    .int8_peak_loop = mk_avx2_int8_peak_loop,
    .bf16_peak_loop = bf16_peak_loop,
};
