/* Portable row kernels: plain C for any CPU (x86-64 without AVX-512, arm64). Written so compilers can
 * vectorize them, but their job is to be right everywhere. */
#include "mk_internal.h"

#include <math.h>

static void matmul_tile(float *out, int64_t ldo, const float *x, int64_t ldx, const void *w, int32_t w_bf16,
                        int64_t ldw, int64_t mr, int64_t nr, int64_t k) {
  for (int64_t t = 0; t < mr; t++)
    for (int64_t o = 0; o < nr; o++) {
      const float *xr = x + t * ldx;
      float acc = 0;
      if (w_bf16) {
        const uint16_t *wr = (const uint16_t *)w + o * ldw;
        for (int64_t j = 0; j < k; j++) acc += xr[j] * mk_bf16_to_f32(wr[j]);
      } else {
        const float *wr = (const float *)w + o * ldw;
        for (int64_t j = 0; j < k; j++) acc += xr[j] * wr[j];
      }
      out[t * ldo + o] = acc;
    }
}

/* BF16 x BF16: each product of two BF16 values is exact in F32; summed in F32 in index order, as the Java spec. */
static void matmul_bf16_tile(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w, int64_t ldw,
                             int64_t mr, int64_t nr, int64_t k) {
  for (int64_t t = 0; t < mr; t++)
    for (int64_t o = 0; o < nr; o++) {
      const uint16_t *xr = x + t * ldx, *wr = w + o * ldw;
      float acc = 0;
      for (int64_t j = 0; j < k; j++) acc += mk_bf16_to_f32(xr[j]) * mk_bf16_to_f32(wr[j]);
      out[t * ldo + o] = acc;
    }
}

static void dot_u8i8_tile(int32_t *acc, int32_t *wsum, const uint8_t *xu, int64_t ldx, const int8_t *w,
                          int64_t ldw, int64_t mr, int64_t nr, int64_t k) {
  for (int64_t t = 0; t < mr; t++)
    for (int64_t o = 0; o < nr; o++) {
      int32_t sum = 0;
      for (int64_t j = 0; j < k; j++) sum += (int32_t)xu[t * ldx + j] * (int32_t)w[o * ldw + j];
      acc[t * MK_I8_NR + o] = sum;
    }
  if (wsum != NULL)
    for (int64_t o = 0; o < nr; o++) {
      int32_t sum = 0;
      for (int64_t j = 0; j < k; j++) sum += w[o * ldw + j];
      wsum[o] = sum;
    }
}

static void f32_to_bf16(uint16_t *out, const float *in, int64_t n) {
  for (int64_t j = 0; j < n; j++) out[j] = mk_f32_to_bf16(in[j]);
}

static void bf16_to_f32(float *out, const uint16_t *in, int64_t n) {
  for (int64_t j = 0; j < n; j++) out[j] = mk_bf16_to_f32(in[j]);
}

static void quantize_row(int8_t *q, float *scale, const void *x, int32_t x_bf16, int64_t k) {
  float amax = 0;
  for (int64_t j = 0; j < k; j++) {
    float v = x_bf16 ? mk_bf16_to_f32(((const uint16_t *)x)[j]) : ((const float *)x)[j];
    float a = fabsf(v);
    if (a > amax) amax = a;
  }
  float inv = amax == 0 ? 0 : 127.0f / amax;
  for (int64_t j = 0; j < k; j++) {
    float v = x_bf16 ? mk_bf16_to_f32(((const uint16_t *)x)[j]) : ((const float *)x)[j];
    float r = rintf(v * inv);
    q[j] = (int8_t)(r > 127 ? 127 : r < -127 ? -127 : r);
  }
  *scale = amax / 127.0f;
}

static float sum_squares(const float *x, int64_t d) {
  float sum = 0;
  for (int64_t j = 0; j < d; j++) sum += x[j] * x[j];
  return sum;
}

static void scale_mul(float *out, const float *x, float r, const float *weight, int64_t d) {
  for (int64_t j = 0; j < d; j++) out[j] = x[j] * r * weight[j];
}

static void silu_mul(float *out, const float *gate, const float *up, int64_t d) {
  for (int64_t j = 0; j < d; j++) out[j] = gate[j] / (1.0f + expf(-gate[j])) * up[j];
}

static void axpy(float *out, float w, const float *y, int64_t d) {
  for (int64_t j = 0; j < d; j++) out[j] = out[j] + w * y[j];
}

static float dot_f32(const float *a, const float *b, int64_t d) {
  float sum = 0;
  for (int64_t j = 0; j < d; j++) sum += a[j] * b[j];
  return sum;
}

static void mla_scores(float *s, const float *ql, const float *qr, const float *kv, int64_t count, int64_t width,
                       int64_t rank, float scale) {
  for (int64_t p = 0; p < count; p++) {
    const float *row = kv + p * width;
    s[p] = (dot_f32(ql, row, rank) + dot_f32(qr, row + rank, width - rank)) * scale;
  }
}

static void mla_accumulate(float *o, const float *prob, const float *kv, int64_t count, int64_t width, int64_t rank) {
  for (int64_t p = 0; p < count; p++) axpy(o, prob[p], kv + p * width, rank);
}

static float exp2_sum(float *s, int64_t count, float m) {
  float sum = 0;
  for (int64_t p = 0; p < count; p++) {
    s[p] = mk_exp2_weight(s[p] - m);
    sum += s[p];
  }
  return sum;
}

static void softmax(float *s, int64_t n, float scale) {
  float max = -INFINITY;
  for (int64_t p = 0; p < n; p++) {
    s[p] *= scale;
    if (s[p] > max) max = s[p];
  }
  float sum = 0;
  for (int64_t p = 0; p < n; p++) {
    s[p] = expf(s[p] - max);
    sum += s[p];
  }
  for (int64_t p = 0; p < n; p++) s[p] /= sum;
}

static void weighted_rows(float *o, int64_t ldo, const float *w, int64_t ldw, const float *v, int64_t ldv, int64_t mr,
                          const int64_t *counts, int64_t d, int64_t from, int64_t to) {
  for (int64_t r = 0; r < mr; r++) {
    float *out = o + r * ldo;
    if (from == 0)
      for (int64_t c = 0; c < d; c++) out[c] = 0;
    for (int64_t p = from; p < counts[r] && p < to; p++) axpy(out, w[r * ldw + p], v + p * ldv, d);
  }
}

static int32_t argmax(const float *x, int64_t d) {
  int64_t best = 0;
  float max = -INFINITY;
  for (int64_t j = 0; j < d; j++) {
    if (x[j] != x[j] || x[j] == INFINITY) return -1;
    if (x[j] > max) max = x[j], best = j;
  }
  return max == -INFINITY ? -1 : (int32_t)best;
}

/* Hides a float's value from the optimizer each iteration, in whatever register class floats live in here. */
#if defined(__x86_64__)
#define OPAQUE_FLOAT(v) __asm__ volatile("" : "+x"(v))
#elif defined(__aarch64__)
#define OPAQUE_FLOAT(v) __asm__ volatile("" : "+w"(v))
#else
#define OPAQUE_FLOAT(v) __asm__ volatile("" : "+m"(v))
#endif

static double bf16_peak_loop(int64_t iterations) {
  /* Eight independent chains of 2-wide F32 dot products, as the portable BF16 matmul runs them, each with operands
   * of its own that are opaque each time: else the products are hoisted out of the loop and only adds are left. */
  volatile float seed = 0.5f;
  float acc[8] = {0}, a = seed, b = seed * 0.5f;
  for (int64_t i = 0; i < iterations; i++) {
    for (int c = 0; c < 8; c++) acc[c] += a * (b + (float)c) + (a - 0.25f) * (b - (float)c);
    OPAQUE_FLOAT(a);
    OPAQUE_FLOAT(b);
  }
  seed = acc[0] + acc[7];
  return (double)iterations * 8 * 2 * 2;
}

static double int8_peak_loop(int64_t iterations) {
  /* Eight independent chains of 4-wide byte dot products, as a scalar machine would run them. */
  volatile int32_t seed = 3;
  int32_t acc[8] = {0}, a = seed, b = seed + 1;
  for (int64_t i = 0; i < iterations; i++) {
    for (int c = 0; c < 8; c++) acc[c] += a * b + (a + 1) * (b + c) + (a + 2) * b + (a + 3) * (b - c);
    __asm__ volatile("" : "+r"(a), "+r"(b)); /* opaque each time: else the loop folds into one multiply */
  }
  seed = acc[0] ^ acc[7];
  return (double)iterations * 8 * 4 * 2;
}

const mk_isa mk_isa_portable = {
    .id = MK_ISA_PORTABLE,
    .matmul_tile = matmul_tile,
    .matmul_bf16_tile = matmul_bf16_tile,
    .dot_u8i8_tile = dot_u8i8_tile,
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
    .softmax = softmax,
    .weighted_rows = weighted_rows,
    .argmax = argmax,
    .int8_peak_loop = int8_peak_loop,
    .bf16_peak_loop = bf16_peak_loop,
};
