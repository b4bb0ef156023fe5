/* The floating-point linear-algebra ops of the ABI: matmul (F32 x F32/BF16, BF16 x BF16) and its per-head forms, and
 * the machine's peaks. Each splits output columns (weight rows) or rows across threads and loops over the ISA's tiles;
 * the INT8 ones are in ops_int8.c. */
#include "mk_internal.h"

#include <stdlib.h>

#define TILE 4
#define BF16_W_TILE 6 /* weight rows of a BF16 x BF16 GEMM tile (4 x 6: 24 chains, see avx512_bf16.c) */
/* Below this many activation rows (decode), weight rows are read one at a time: a single sequential stream
 * is what the hardware prefetcher follows best; interleaving a few rows' streams halved the bandwidth. */
#define GEMV_ROWS 4
/* ...unless the rows are this short (bytes) or shorter: then 4 rows side by side are still one stream, and a
 * call, a chain and a horizontal sum per row of 128 bytes (k = 64 in BF16) cost more than the row. Rows of 512 bytes
 * (the absorbed MLA's W_UV, k = 256) go to the 16-row BF16 GEMV: a batch-1 call 18.4-19.7 -> 10.0-10.8 us against
 * 1 x 6 tiles (alternated in a driver over 64 layers' weights), the same bits. */
#define GEMV_SHORT_ROW 256

/* ---- matmul ---- */
typedef struct {
  const mk_isa *isa;
  float *out;
  const void *x;
  const void *w;
  int64_t ldo, ldx, ldw, n, k;
  int32_t x_bf16, w_bf16;
} matmul_job;

static void matmul_range(void *raw, int64_t o_begin, int64_t o_end) {
  matmul_job *j = raw;
  size_t xsize = j->x_bf16 ? 2 : 4, wsize = j->w_bf16 ? 2 : 4;
  int64_t tile = j->n < GEMV_ROWS && (size_t)j->k * wsize > GEMV_SHORT_ROW ? 1 : j->x_bf16 ? BF16_W_TILE : TILE;
  /* 1 to 3 activation rows against long BF16 weight rows: 16 weight rows a call, each activation row in turn while
   * the 16 rows are in cache (read from memory once). One weight row at a time against 2-3 activation rows was ~5x a
   * row's GEMV on AVX2 (a verify step's head); the same bits either way. */
  int gemv16 = tile == 1 && j->w_bf16 && (j->x_bf16 ? j->isa->gemv_bf16_rows != NULL : j->isa->gemv_f32_bf16_rows != NULL);
  if (gemv16) tile = MK_BF16_GEMV_NR;
  for (int64_t t0 = 0; t0 < j->n; t0 += MK_X_BLOCK) {
    int64_t t_end = t0 + MK_X_BLOCK < j->n ? t0 + MK_X_BLOCK : j->n, x_tiles = (t_end - t0 + TILE - 1) / TILE;
    for (int64_t o = o_begin; o < o_end; o += tile) {
      int64_t nr = o_end - o < tile ? o_end - o : tile;
      int64_t next_nr = tile > 1 && o_end - (o + nr) > 0 ? (o_end - (o + nr) < tile ? o_end - (o + nr) : tile) : 0;
      const void *w = (const char *)j->w + (size_t)(o * j->ldw) * wsize;
      if (gemv16) { /* 16 rows a call; a range's last few one at a time */
        for (int64_t t = 0; t < j->n && nr == MK_BF16_GEMV_NR; t++) {
          const void *x = (const char *)j->x + (size_t)(t * j->ldx) * xsize;
          if (j->x_bf16) j->isa->gemv_bf16_rows(j->out + t * j->ldo + o, x, w, j->ldw, j->k);
          else j->isa->gemv_f32_bf16_rows(j->out + t * j->ldo + o, x, w, j->ldw, j->k);
        }
        for (int64_t r = 0; r < nr && nr < MK_BF16_GEMV_NR; r++) {
          const uint16_t *wr = (const uint16_t *)w + r * j->ldw;
          if (j->x_bf16) j->isa->matmul_bf16_tile(j->out + o + r, j->ldo, j->x, j->ldx, wr, j->ldw, j->n, 1, j->k);
          else j->isa->matmul_tile(j->out + o + r, j->ldo, j->x, j->ldx, wr, 1, j->ldw, j->n, 1, j->k);
        }
        continue;
      }
      /* every other weight tile walks the activation tiles backwards: it starts on the ones still in L1 */
      int backward = (int)((o - o_begin) / tile) & 1;
      for (int64_t i = 0; i < x_tiles; i++) {
        int64_t t = t0 + (backward ? x_tiles - 1 - i : i) * TILE, mr = t_end - t < TILE ? t_end - t : TILE;
        const void *x = (const char *)j->x + (size_t)(t * j->ldx) * xsize;
        if (next_nr > 0)
          mk_prefetch_rows((const char *)w + (size_t)(nr * j->ldw) * wsize, (size_t)j->ldw * wsize, next_nr,
                           (size_t)j->k * wsize, i, x_tiles);
        if (j->x_bf16) j->isa->matmul_bf16_tile(j->out + t * j->ldo + o, j->ldo, x, j->ldx, w, j->ldw, mr, nr, j->k);
        else j->isa->matmul_tile(j->out + t * j->ldo + o, j->ldo, x, j->ldx, w, j->w_bf16, j->ldw, mr, nr, j->k);
      }
    }
  }
}

MK_EXPORT int32_t mk_matmul(mk_context *ctx, float *out, int64_t ldo, const void *x, int32_t x_dtype, int64_t ldx,
                            const void *w, int32_t w_dtype, int64_t ldw, int64_t n, int64_t m, int64_t k) {
  if (ctx == NULL || out == NULL || x == NULL || w == NULL) return MK_E_NULL;
  if (n < 0 || m < 0 || k < 0 || ldo < m || ldx < k || ldw < k) return MK_E_SHAPE;
  if (w_dtype != MK_F32 && w_dtype != MK_BF16) return MK_E_DTYPE;
  if (x_dtype != MK_F32 && !(x_dtype == MK_BF16 && w_dtype == MK_BF16)) return MK_E_DTYPE;
  int32_t x_bf16 = x_dtype == MK_BF16, w_bf16 = w_dtype == MK_BF16;
  float *xp = NULL;
  if (!x_bf16 && w_bf16 && ctx->isa->prepare_x_bf16 != NULL) {
    xp = aligned_alloc(64, (size_t)((n * k * 4 + 63) / 64 * 64) + 64);
    if (xp == NULL) return MK_E_NOMEM;
    for (int64_t t = 0; t < n; t++) ctx->isa->prepare_x_bf16(xp + t * k, (const float *)x + t * ldx, k);
  }
  matmul_job j = {ctx->isa, out, xp != NULL ? xp : x, w, ldo, xp != NULL ? k : ldx, ldw, n, k, x_bf16, w_bf16};
  int64_t bytes = m * k * (w_bf16 ? 2 : 4);
  mk_parallel_for(ctx, m, 16, bytes + n * m * k, matmul_range, &j);
  free(xp);
  return MK_OK;
}

/* ---- matmul_heads: one matmul_job per head; work units are (head, 16 weight rows), head-major ---- */
typedef struct {
  matmul_job *heads; /* one job per head */
  int64_t blocks;    /* 16-row blocks of one head's m weight rows */
  int64_t m;
} heads_job;

static void heads_range(void *raw, int64_t begin, int64_t end) {
  heads_job *j = raw;
  for (int64_t u = begin; u < end; u++) {
    int64_t h = u / j->blocks, o = u % j->blocks * 16, o_end = o + 16 < j->m ? o + 16 : j->m;
    matmul_range(&j->heads[h], o, o_end);
  }
}

MK_EXPORT int32_t mk_matmul_heads(mk_context *ctx, float *out, int64_t ldo, const void *x, int32_t x_dtype, int64_t ldx,
                                  const void *w, int32_t w_dtype, int64_t n, int64_t heads, int64_t m, int64_t k) {
  if (ctx == NULL || out == NULL || x == NULL || w == NULL) return MK_E_NULL;
  if (n < 0 || heads < 0 || m < 0 || k < 0 || ldo < m || ldx < k) return MK_E_SHAPE;
  if (w_dtype != MK_F32 && w_dtype != MK_BF16) return MK_E_DTYPE;
  if (x_dtype != MK_F32 && !(x_dtype == MK_BF16 && w_dtype == MK_BF16)) return MK_E_DTYPE;
  if (n == 0 || heads == 0 || m == 0) return MK_OK;
  int32_t x_bf16 = x_dtype == MK_BF16, w_bf16 = w_dtype == MK_BF16;
  size_t xsize = x_bf16 ? 2 : 4, wsize = w_bf16 ? 2 : 4;
  float *xp = NULL; /* as mk_matmul: F32 rows against BF16 weights in the layout the tiles want, (t, h) rows of k */
  if (!x_bf16 && w_bf16 && ctx->isa->prepare_x_bf16 != NULL) {
    xp = aligned_alloc(64, (size_t)((n * heads * k * 4 + 63) / 64 * 64) + 64);
    if (xp == NULL) return MK_E_NOMEM;
    for (int64_t r = 0; r < n * heads; r++) ctx->isa->prepare_x_bf16(xp + r * k, (const float *)x + r * ldx, k);
  }
  matmul_job *jobs = malloc(sizeof(matmul_job) * (size_t)heads);
  if (jobs == NULL) {
    free(xp);
    return MK_E_NOMEM;
  }
  for (int64_t h = 0; h < heads; h++) { /* head h: rows t * heads + h, i.e. stride heads rows from row h */
    const void *xh = xp != NULL ? (const void *)(xp + h * k) : (const void *)((const char *)x + (size_t)(h * ldx) * xsize);
    jobs[h] = (matmul_job){ctx->isa, out + h * ldo, xh, (const char *)w + (size_t)(h * m * k) * wsize, heads * ldo,
                           heads * (xp != NULL ? k : ldx), k, n, k, x_bf16, w_bf16};
  }
  heads_job j = {jobs, (m + 15) / 16, m};
  mk_parallel_for(ctx, heads * j.blocks, 1, heads * m * k * (int64_t)wsize + n * heads * m * k,
                  heads_range, &j);
  free(jobs);
  free(xp);
  return MK_OK;
}

/* ---- matmul_heads_km: x · w[h] with w (heads, k, m); work units (head, 32 outputs), head-major ---- */
typedef struct {
  const mk_isa *isa;
  float *out;
  const void *x, *w;
  const uint16_t *pairs; /* w as its column pairs (mk_matmul_heads_km_pairs), else null */
  int64_t ldo, ldx, n, heads, m, k, blocks;
  int32_t x_bf16, w_bf16;
} heads_km_job;

/* x row (t, h)[c] and w[h][c][o] as F32 (BF16 widens exactly), from whichever layout w has. */
static inline float heads_km_x(const heads_km_job *j, int64_t row, int64_t c) {
  return j->x_bf16 ? mk_bf16_to_f32(((const uint16_t *)j->x)[row * j->ldx + c]) : ((const float *)j->x)[row * j->ldx + c];
}

static inline float heads_km_w(const heads_km_job *j, int64_t h, int64_t c, int64_t o) {
  if (j->pairs != NULL)
    return mk_bf16_to_f32(j->pairs[((h * j->blocks + o / 32) * ((j->k + 1) / 2) + c / 2) * 64 + o % 32 * 2 + c % 2]);
  size_t at = (size_t)((h * j->k + c) * j->m + o);
  return j->w_bf16 ? mk_bf16_to_f32(((const uint16_t *)j->w)[at]) : ((const float *)j->w)[at];
}

/* One unit in F32: each output adds x[c]·w[c][o] in column order, rounded once per multiply and per add. */
static void heads_km_f32_unit(const heads_km_job *j, int64_t h, int64_t o0, int64_t mo) {
  for (int64_t t = 0; t < j->n; t++) {
    int64_t row = t * j->heads + h;
    float acc[32] = {0};
    for (int64_t c = 0; c < j->k; c++) {
      float xc = heads_km_x(j, row, c);
      for (int64_t o = 0; o < mo; o++) acc[o] = acc[o] + xc * heads_km_w(j, h, c, o0 + o);
    }
    for (int64_t o = 0; o < mo; o++) j->out[row * j->ldo + o0 + o] = acc[o];
  }
}

/* Units ahead whose weights a BF16 unit prefetches: without, W_UK at batch 1 waited on each of its 64 rows' pieces
 * (from DRAM, 16 heads x 64 x 256: 1.73x with 1 ahead, 1.74-1.77x with 2; batch 32 1.10x). Pairs laid out at load
 * are one sequential stream, which the hardware prefetcher follows. */
#define KM_UNITS_AHEAD 2

static void heads_km_range(void *raw, int64_t begin, int64_t end) {
  const heads_km_job *j = raw;
  int paired = j->x_bf16 && j->pairs != NULL && j->isa->heads_km_bf16_pairs != NULL;
  int units = j->x_bf16 && j->pairs == NULL && j->isa->heads_km_bf16_unit != NULL;
  uint32_t *wt = units ? aligned_alloc(64, sizeof(uint32_t) * 32 * (size_t)((j->k + 1) / 2 + 1)) : NULL;
  if (units && wt == NULL) mk_part_nomem(), end = begin; /* 64 KiB at k = 1024 */
  for (int64_t u = begin; u < end; u++) {
    int64_t h = u / j->blocks, o0 = u % j->blocks * 32, mo = j->m - o0 < 32 ? j->m - o0 : 32;
    float *out = j->out + h * j->ldo + o0;
    const uint16_t *x = j->x_bf16 ? (const uint16_t *)j->x + h * j->ldx : NULL; /* the BF16 units only */
    if (paired) {
      j->isa->heads_km_bf16_pairs(out, j->heads * j->ldo, x, j->heads * j->ldx, j->n, mo, j->k,
                                  (const uint32_t *)j->pairs + u * 32 * ((j->k + 1) / 2));
      continue;
    }
    if (units && u + KM_UNITS_AHEAD < end) { /* a later unit's k pieces of 64 bytes: a stride the prefetcher misses */
      int64_t v = u + KM_UNITS_AHEAD;
      const uint16_t *wv = (const uint16_t *)j->w + v / j->blocks * j->k * j->m + v % j->blocks * 32;
      for (int64_t c = 0; c < j->k; c++) __builtin_prefetch(wv + c * j->m, 0, 3);
    }
    if (units)
      j->isa->heads_km_bf16_unit(out, j->heads * j->ldo, x, j->heads * j->ldx, (const uint16_t *)j->w + h * j->k * j->m + o0,
                                 j->m, j->n, mo, j->k, wt);
    else heads_km_f32_unit(j, h, o0, mo);
  }
  free(wt);
}

static int32_t heads_km_run(mk_context *ctx, heads_km_job *j, int64_t weight_bytes) {
  return mk_parallel_for(ctx, j->heads * j->blocks, 1, weight_bytes + j->n * j->heads * j->m * j->k, heads_km_range, j);
}

MK_EXPORT int32_t mk_matmul_heads_km(mk_context *ctx, float *out, int64_t ldo, const void *x, int32_t x_dtype,
                                     int64_t ldx, const void *w, int32_t w_dtype, int64_t n, int64_t heads, int64_t m,
                                     int64_t k) {
  if (ctx == NULL || out == NULL || x == NULL || w == NULL) return MK_E_NULL;
  if (n < 0 || heads < 0 || m < 0 || k < 0 || ldo < m || ldx < k) return MK_E_SHAPE;
  if (w_dtype != MK_F32 && w_dtype != MK_BF16) return MK_E_DTYPE;
  if (x_dtype != MK_F32 && !(x_dtype == MK_BF16 && w_dtype == MK_BF16)) return MK_E_DTYPE;
  if (n == 0 || heads == 0 || m == 0) return MK_OK;
  heads_km_job j = {ctx->isa, out, x, w, NULL, ldo, ldx, n, heads, m, k, (m + 31) / 32, x_dtype == MK_BF16, w_dtype == MK_BF16};
  return heads_km_run(ctx, &j, heads * m * k * (w_dtype == MK_BF16 ? 2 : 4));
}

MK_EXPORT int32_t mk_matmul_heads_km_pairs(mk_context *ctx, float *out, int64_t ldo, const uint16_t *x, int64_t ldx,
                                           const uint16_t *wp, int64_t n, int64_t heads, int64_t m, int64_t k) {
  if (ctx == NULL || out == NULL || x == NULL || wp == NULL) return MK_E_NULL;
  if (n < 0 || heads < 0 || m < 0 || k < 0 || ldo < m || ldx < k) return MK_E_SHAPE;
  if (n == 0 || heads == 0 || m == 0) return MK_OK;
  heads_km_job j = {ctx->isa, out, x, NULL, wp, ldo, ldx, n, heads, m, k, (m + 31) / 32, 1, 1};
  return heads_km_run(ctx, &j, heads * j.blocks * ((k + 1) / 2) * 128);
}

/* ---- the machine's INT8 and BF16 peaks, for benchmarks: a register-only loop on every thread at once ---- */
typedef struct {
  double (*loop)(int64_t iterations);
  int64_t iterations;
  double ops[256];
} peak_job;

static void peak_range(void *raw, int64_t begin, int64_t end) {
  peak_job *j = raw;
  for (int64_t i = begin; i < end; i++) j->ops[i] = j->loop(j->iterations);
}

static double peak_ops(mk_context *ctx, double (*loop)(int64_t), int64_t iterations) {
  peak_job j = {loop, iterations, {0}};
  mk_parallel_for(ctx, ctx->threads, 1, INT64_MAX, peak_range, &j);
  double total = 0;
  for (int32_t i = 0; i < ctx->threads; i++) total += j.ops[i];
  return total;
}

MK_EXPORT double mk_int8_peak_ops(mk_context *ctx, int64_t iterations) {
  return ctx == NULL || iterations < 1 ? -1 : peak_ops(ctx, ctx->isa->int8_peak_loop, iterations);
}

MK_EXPORT double mk_bf16_peak_ops(mk_context *ctx, int64_t iterations) {
  return ctx == NULL || iterations < 1 ? -1 : peak_ops(ctx, ctx->isa->bf16_peak_loop, iterations);
}
