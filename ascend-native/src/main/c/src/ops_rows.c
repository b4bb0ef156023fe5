/* Row-wise ops of the ABI: RMSNorm, RoPE, SiLU·up (and fused with the INT8 quantization after it), dtype conversion,
 * FP8 dequantization, and the expert dispatch/combine helpers. Rows are independent; threads take contiguous row ranges. */
#include "mk_internal.h"

#include <math.h>
#include <stdlib.h>

/* ---- rms_norm ---- */
typedef struct {
  const mk_isa *isa;
  float *out;
  const float *x, *weight;
  int64_t ldo, ldx, d;
  float eps;
} rms_job;

static void rms_range(void *raw, int64_t begin, int64_t end) {
  rms_job *j = raw;
  for (int64_t t = begin; t < end; t++) {
    const float *x = j->x + t * j->ldx;
    float mean = j->isa->sum_squares(x, j->d) / (float)j->d;
    float r = 1.0f / sqrtf(mean + j->eps);
    j->isa->scale_mul(j->out + t * j->ldo, x, r, j->weight, j->d);
  }
}

MK_EXPORT int32_t mk_rms_norm(mk_context *ctx, float *out, int64_t ldo, const float *x, int64_t ldx,
                              const float *weight, float eps, int64_t n, int64_t d) {
  if (ctx == NULL || out == NULL || x == NULL || weight == NULL) return MK_E_NULL;
  if (n < 0 || d < 1 || ldo < d || ldx < d) return MK_E_SHAPE;
  rms_job j = {ctx->isa, out, x, weight, ldo, ldx, d, eps};
  mk_parallel_for(ctx, n, 1, n * d * 8, rms_range, &j);
  return MK_OK;
}

/* ---- rope ---- */
MK_EXPORT int32_t mk_rope(mk_context *ctx, float *x, int64_t ldx, int64_t rows, int64_t rows_per_pos,
                          const int32_t *positions, const float *cos_table, const float *sin_table, int64_t max_pos,
                          int64_t d) {
  if (ctx == NULL || x == NULL || positions == NULL || cos_table == NULL || sin_table == NULL) return MK_E_NULL;
  if (rows < 0 || rows_per_pos < 1 || d < 2 || d % 2 != 0 || ldx < d || rows % rows_per_pos != 0) return MK_E_SHAPE;
  int64_t half = d / 2;
  for (int64_t p = 0; p < rows / rows_per_pos; p++)
    if (positions[p] < 0 || positions[p] >= max_pos) return MK_E_INDEX;
  for (int64_t r = 0; r < rows; r++) {
    int32_t pos = positions[r / rows_per_pos];
    const float *c = cos_table + (int64_t)pos * half, *s = sin_table + (int64_t)pos * half;
    float *v = x + r * ldx;
    for (int64_t i = 0; i < half; i++) {
      float x0 = v[2 * i], x1 = v[2 * i + 1];
      v[2 * i] = x0 * c[i] - x1 * s[i];
      v[2 * i + 1] = x0 * s[i] + x1 * c[i];
    }
  }
  return MK_OK;
}

/* ---- silu_mul ---- */
typedef struct {
  const mk_isa *isa;
  float *out;
  const float *gate, *up;
  int64_t ldo, ldg, ldu, d;
} silu_job;

static void silu_range(void *raw, int64_t begin, int64_t end) {
  silu_job *j = raw;
  for (int64_t t = begin; t < end; t++)
    j->isa->silu_mul(j->out + t * j->ldo, j->gate + t * j->ldg, j->up + t * j->ldu, j->d);
}

MK_EXPORT int32_t mk_silu_mul(mk_context *ctx, float *out, int64_t ldo, const float *gate, int64_t ldg,
                              const float *up, int64_t ldu, int64_t n, int64_t d) {
  if (ctx == NULL || out == NULL || gate == NULL || up == NULL) return MK_E_NULL;
  if (n < 0 || d < 0 || ldo < d || ldg < d || ldu < d) return MK_E_SHAPE;
  silu_job j = {ctx->isa, out, gate, up, ldo, ldg, ldu, d};
  mk_parallel_for(ctx, n, 1, n * d * 12, silu_range, &j);
  return MK_OK;
}

/* ---- silu_mul_quantize: silu_mul's row into a buffer, then quantize_row from it ---- */
typedef struct {
  const mk_isa *isa;
  int8_t *q;
  float *scales;
  const float *gate, *up;
  int64_t ldq, ldg, ldu, d;
} silu_quantize_job;

/* The row buffer is the heap's, not the stack's: with a 16 KiB buffer on the stack, the grouped A8W8 call that followed
 * in a prompt step ran 2.4x slower (four engine runs against one, not understood), with malloc it did not. */
static void silu_quantize_range(void *raw, int64_t begin, int64_t end) {
  silu_quantize_job *j = raw;
  float *row = aligned_alloc(64, (size_t)((j->d * 4 + 63) / 64 * 64));
  if (row == NULL) mk_part_nomem(), end = begin; /* d floats */
  for (int64_t t = begin; t < end; t++) {
    j->isa->silu_mul(row, j->gate + t * j->ldg, j->up + t * j->ldu, j->d);
    j->isa->quantize_row(j->q + t * j->ldq, j->scales + t, row, 0, j->d);
  }
  free(row);
}

MK_EXPORT int32_t mk_silu_mul_quantize(mk_context *ctx, int8_t *q, int64_t ldq, float *scales, const float *gate,
                                       int64_t ldg, const float *up, int64_t ldu, int64_t n, int64_t d) {
  if (ctx == NULL || q == NULL || scales == NULL || gate == NULL || up == NULL) return MK_E_NULL;
  if (n < 0 || d < 0 || ldq < d || ldg < d || ldu < d) return MK_E_SHAPE;
  silu_quantize_job j = {ctx->isa, q, scales, gate, up, ldq, ldg, ldu, d};
  return mk_parallel_for(ctx, n, 1, n * d * 9, silu_quantize_range, &j);
}

/* ---- convert ---- */
/* Bytes touched below which a conversion stays on the calling thread: measured at 2 threads, handing off
 * 32 x 512 values cost more than it saved, 32 x 1024 about broke even, 32 x 2048 and up gained. */
#define CONVERT_PARALLEL_MIN_BYTES (256 * 1024)

typedef struct {
  const mk_isa *isa;
  void *out;
  const void *in;
  int64_t ldo, ldi, d;
  int32_t to_bf16;
} convert_job;

static void convert_range(void *raw, int64_t begin, int64_t end) {
  convert_job *j = raw;
  for (int64_t t = begin; t < end; t++)
    if (j->to_bf16) j->isa->f32_to_bf16((uint16_t *)j->out + t * j->ldo, (const float *)j->in + t * j->ldi, j->d);
    else j->isa->bf16_to_f32((float *)j->out + t * j->ldo, (const uint16_t *)j->in + t * j->ldi, j->d);
}

MK_EXPORT int32_t mk_convert(mk_context *ctx, void *out, int32_t out_dtype, int64_t ldo, const void *in,
                             int32_t in_dtype, int64_t ldi, int64_t n, int64_t d) {
  if (ctx == NULL || out == NULL || in == NULL) return MK_E_NULL;
  if (n < 0 || d < 0 || ldo < d || ldi < d) return MK_E_SHAPE;
  int32_t to_bf16 = out_dtype == MK_BF16 && in_dtype == MK_F32;
  if (!to_bf16 && !(out_dtype == MK_F32 && in_dtype == MK_BF16)) return MK_E_DTYPE;
  convert_job j = {ctx->isa, out, in, ldo, ldi, d, to_bf16};
  if (n * d * 6 < CONVERT_PARALLEL_MIN_BYTES) convert_range(&j, 0, n);
  else mk_parallel_for(ctx, n, 1, n * d * 6, convert_range, &j);
  return MK_OK;
}

/* ---- FP8 e4m3 dequantization with block scales ---- */
float mk_fp8_e4m3_to_f32(uint8_t b) {
  uint32_t sign = (uint32_t)(b & 0x80) << 24;
  uint32_t exponent = (b >> 3) & 0xF, mantissa = b & 0x7;
  uint32_t bits;
  if (exponent == 0xF && mantissa == 0x7) {
    bits = sign | 0x7FC00000u;
  } else if (exponent == 0) { /* subnormal: mantissa/8 · 2^-6, exact in F32 */
    float f = (float)mantissa * 0x1p-9f;
    memcpy(&bits, &f, 4);
    bits |= sign;
  } else {
    bits = sign | ((exponent - 7 + 127) << 23) | (mantissa << 20);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

typedef struct {
  void *out;
  const uint8_t *w;
  const float *scale_inv;
  int64_t ldo, ldw, lds, k, block;
  int32_t out_bf16;
} fp8_job;

static void fp8_range(void *raw, int64_t begin, int64_t end) {
  fp8_job *j = raw;
  float table[256];
  for (int i = 0; i < 256; i++) table[i] = mk_fp8_e4m3_to_f32((uint8_t)i);
  for (int64_t r = begin; r < end; r++) {
    const uint8_t *w = j->w + r * j->ldw;
    const float *s = j->scale_inv + (r / j->block) * j->lds;
    for (int64_t c = 0; c < j->k; c++) {
      float v = table[w[c]] * s[c / j->block];
      if (j->out_bf16) ((uint16_t *)j->out)[r * j->ldo + c] = mk_f32_to_bf16(v);
      else ((float *)j->out)[r * j->ldo + c] = v;
    }
  }
}

MK_EXPORT int32_t mk_dequant_fp8(mk_context *ctx, void *out, int32_t out_dtype, int64_t ldo, const uint8_t *w,
                                 int64_t ldw, const float *scale_inv, int64_t lds, int64_t m, int64_t k,
                                 int64_t block) {
  if (ctx == NULL || out == NULL || w == NULL || scale_inv == NULL) return MK_E_NULL;
  if (m < 0 || k < 0 || block < 1 || ldo < k || ldw < k || lds < (k + block - 1) / block) return MK_E_SHAPE;
  if (out_dtype != MK_F32 && out_dtype != MK_BF16) return MK_E_DTYPE;
  fp8_job j = {out, w, scale_inv, ldo, ldw, lds, k, block, out_dtype == MK_BF16};
  mk_parallel_for(ctx, m, 1, m * k * 4, fp8_range, &j);
  return MK_OK;
}

/* ---- dispatch: gather rows and quantize them ---- */
MK_EXPORT int32_t mk_gather_quantize(mk_context *ctx, int8_t *q, int64_t ldq, float *scales, const float *x,
                                     int64_t ldx, int64_t n, const int32_t *rows, int64_t r, int64_t d) {
  if (ctx == NULL || q == NULL || scales == NULL || x == NULL || (rows == NULL && r > 0)) return MK_E_NULL;
  if (n < 0 || r < 0 || d < 0 || ldq < d || ldx < d) return MK_E_SHAPE;
  for (int64_t i = 0; i < r; i++)
    if (rows[i] < 0 || rows[i] >= n) return MK_E_INDEX;
  for (int64_t i = 0; i < r; i++) ctx->isa->quantize_row(q + i * ldq, scales + i, x + rows[i] * ldx, 0, d);
  return MK_OK;
}

/* ---- combine: weighted scatter-add in a fixed order ---- */
MK_EXPORT int32_t mk_scatter_add(mk_context *ctx, float *out, int64_t ldo, int64_t n, const float *y, int64_t ldy,
                                 const int32_t *rows, const float *weights, int64_t r, int64_t d) {
  if (ctx == NULL || out == NULL || y == NULL || (r > 0 && (rows == NULL || weights == NULL))) return MK_E_NULL;
  if (n < 0 || r < 0 || d < 0 || ldo < d || ldy < d) return MK_E_SHAPE;
  for (int64_t i = 0; i < r; i++)
    if (rows[i] < 0 || rows[i] >= n) return MK_E_INDEX;
  for (int64_t i = 0; i < r; i++) ctx->isa->axpy(out + rows[i] * ldo, weights[i], y + i * ldy, d);
  return MK_OK;
}

/* ---- argmax_rows ---- */
typedef struct {
  const mk_isa *isa;
  int32_t *ids;
  const float *x;
  int64_t ldx, d;
} argmax_job;

static void argmax_range(void *raw, int64_t begin, int64_t end) {
  argmax_job *j = raw;
  for (int64_t t = begin; t < end; t++) j->ids[t] = j->isa->argmax(j->x + t * j->ldx, j->d);
}

MK_EXPORT int32_t mk_argmax_rows(mk_context *ctx, int32_t *ids, const float *x, int64_t ldx, int64_t n, int64_t d) {
  if (ctx == NULL || ids == NULL || x == NULL) return MK_E_NULL;
  if (n < 0 || d < 1 || d > INT32_MAX || ldx < d) return MK_E_SHAPE;
  argmax_job j = {ctx->isa, ids, x, ldx, d};
  mk_parallel_for(ctx, n, 1, n * d * 4, argmax_range, &j);
  return MK_OK;
}
