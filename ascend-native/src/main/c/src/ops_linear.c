/* The linear-algebra ops of the ABI: matmul (F32 x F32/BF16, BF16 x BF16), INT8 quantization and A8W8 matmul. Each
 * splits output columns (weight rows) or rows across threads and loops over the ISA's tiles. */
#include "mk_internal.h"

#include <stdlib.h>


#define TILE 4
#define BF16_W_TILE 6 /* weight rows of a BF16 x BF16 GEMM tile (4 x 6: 24 chains, see avx512_bf16.c) */
#define X_BLOCK 128 /* activation rows kept hot in L2 while all weight rows stream past */
/* Below this many activation rows (decode), weight rows are read one at a time: a single sequential stream
 * is what the hardware prefetcher follows best; interleaving a few rows' streams halved the bandwidth. */
#define GEMV_ROWS 4
/* ...unless the rows are this short (bytes) or shorter: then 4 rows side by side are still one stream, and a
 * call, a chain and a horizontal sum per row of 128 bytes (k = 64 in BF16) cost more than the row. Rows of 512 bytes
 * (the absorbed MLA's W_UV, k = 256) go to the 16-row BF16 GEMV: a batch-1 call 18.4-19.7 -> 10.0-10.8 us against
 * 1 x 6 tiles (alternated in a driver over 64 layers' weights), the same bits. */
#define GEMV_SHORT_ROW 256
/* Up to this many activation rows A8W8 takes weight rows one at a time (MK_I8_ROWS activation rows per pass); from
 * 10 rows on the 6-row GEMM tiles were as fast or faster (measured on 512 x 1024 and 1024 x 512 experts). */
#define I8_FEW_ROWS 9

/* ---- matmul ---- */
typedef struct {
  const mk_isa *isa;
  float *out;
  const void *x;
  const void *w;
  int64_t ldo, ldx, ldw, n, k;
  int32_t x_bf16, w_bf16;
} matmul_job;

/* Part `part` of `parts` of the cache lines of `rows` weight rows. Spread over the activation tiles of one weight
 * tile, it brings the next weight tile in while this one computes: waiting for each weight tile at its first
 * use cost the BF16 x BF16 GEMM a third of its time, and the F32 x BF16 GEMM a sixth. */
static void prefetch_rows(const char *w, size_t ld_bytes, int64_t rows, size_t row_bytes, int64_t part, int64_t parts) {
  size_t lines = (row_bytes + 63) / 64, begin = lines * (size_t)part / (size_t)parts;
  size_t end = lines * (size_t)(part + 1) / (size_t)parts;
  for (int64_t r = 0; r < rows; r++)
    for (size_t l = begin; l < end; l++) __builtin_prefetch(w + (size_t)r * ld_bytes + l * 64, 0, 3);
}

static void matmul_range(void *raw, int64_t o_begin, int64_t o_end) {
  matmul_job *j = raw;
  size_t xsize = j->x_bf16 ? 2 : 4, wsize = j->w_bf16 ? 2 : 4;
  int64_t tile = j->n < GEMV_ROWS && (size_t)j->k * wsize > GEMV_SHORT_ROW ? 1 : j->x_bf16 ? BF16_W_TILE : TILE;
  /* one BF16 activation row against long weight rows: 16 weight rows a call */
  int gemv16 = tile == 1 && j->n == 1 && j->x_bf16 && j->isa->gemv_bf16_rows != NULL;
  if (gemv16) tile = MK_BF16_GEMV_NR;
  for (int64_t t0 = 0; t0 < j->n; t0 += X_BLOCK) {
    int64_t t_end = t0 + X_BLOCK < j->n ? t0 + X_BLOCK : j->n, x_tiles = (t_end - t0 + TILE - 1) / TILE;
    for (int64_t o = o_begin; o < o_end; o += tile) {
      int64_t nr = o_end - o < tile ? o_end - o : tile;
      int64_t next_nr = tile > 1 && o_end - (o + nr) > 0 ? (o_end - (o + nr) < tile ? o_end - (o + nr) : tile) : 0;
      const void *w = (const char *)j->w + (size_t)(o * j->ldw) * wsize;
      if (gemv16) { /* 16 rows a call; a range's last few one at a time */
        if (nr == MK_BF16_GEMV_NR) j->isa->gemv_bf16_rows(j->out + o, j->x, w, j->ldw, j->k);
        else
          for (int64_t r = 0; r < nr; r++)
            j->isa->matmul_bf16_tile(j->out + o + r, j->ldo, j->x, j->ldx, (const uint16_t *)w + r * j->ldw, j->ldw, 1, 1, j->k);
        continue;
      }
      /* every other weight tile walks the activation tiles backwards: it starts on the ones still in L1 */
      int backward = (int)((o - o_begin) / tile) & 1;
      for (int64_t i = 0; i < x_tiles; i++) {
        int64_t t = t0 + (backward ? x_tiles - 1 - i : i) * TILE, mr = t_end - t < TILE ? t_end - t : TILE;
        const void *x = (const char *)j->x + (size_t)(t * j->ldx) * xsize;
        if (next_nr > 0)
          prefetch_rows((const char *)w + (size_t)(nr * j->ldw) * wsize, (size_t)j->ldw * wsize, next_nr,
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
  if (units && wt == NULL) abort(); /* 64 KiB at k = 1024; failure here means the process is already lost */
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

static void heads_km_run(mk_context *ctx, heads_km_job *j, int64_t weight_bytes) {
  mk_parallel_for(ctx, j->heads * j->blocks, 1, weight_bytes + j->n * j->heads * j->m * j->k, heads_km_range, j);
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
  heads_km_run(ctx, &j, heads * m * k * (w_dtype == MK_BF16 ? 2 : 4));
  return MK_OK;
}

MK_EXPORT int32_t mk_matmul_heads_km_pairs(mk_context *ctx, float *out, int64_t ldo, const uint16_t *x, int64_t ldx,
                                           const uint16_t *wp, int64_t n, int64_t heads, int64_t m, int64_t k) {
  if (ctx == NULL || out == NULL || x == NULL || wp == NULL) return MK_E_NULL;
  if (n < 0 || heads < 0 || m < 0 || k < 0 || ldo < m || ldx < k) return MK_E_SHAPE;
  if (n == 0 || heads == 0 || m == 0) return MK_OK;
  heads_km_job j = {ctx->isa, out, x, NULL, wp, ldo, ldx, n, heads, m, k, (m + 31) / 32, 1, 1};
  heads_km_run(ctx, &j, heads * j.blocks * ((k + 1) / 2) * 128);
  return MK_OK;
}

/* ---- quantize_rows ---- */
typedef struct {
  const mk_isa *isa;
  int8_t *q;
  float *scales;
  const void *x;
  int64_t ldq, ldx, k;
  int32_t x_bf16;
} quantize_job;

static void quantize_range(void *raw, int64_t begin, int64_t end) {
  quantize_job *j = raw;
  size_t xsize = j->x_bf16 ? 2 : 4;
  for (int64_t t = begin; t < end; t++)
    j->isa->quantize_row(j->q + t * j->ldq, j->scales + t, (const char *)j->x + (size_t)(t * j->ldx) * xsize,
                         j->x_bf16, j->k);
}

MK_EXPORT int32_t mk_quantize_rows(mk_context *ctx, int8_t *q, int64_t ldq, float *scales, const void *x,
                                   int32_t x_dtype, int64_t ldx, int64_t n, int64_t k) {
  if (ctx == NULL || q == NULL || scales == NULL || x == NULL) return MK_E_NULL;
  if (n < 0 || k < 0 || ldq < k || ldx < k) return MK_E_SHAPE;
  if (x_dtype != MK_F32 && x_dtype != MK_BF16) return MK_E_DTYPE;
  quantize_job j = {ctx->isa, q, scales, x, ldq, ldx, k, x_dtype == MK_BF16};
  mk_parallel_for(ctx, n, 1, n * k * 4, quantize_range, &j);
  return MK_OK;
}

/* ---- A8W8 matmul ----
 * VPDPBUSD multiplies unsigned by signed bytes, so activations travel as xu = xq + 128 and each dot is
 * corrected by 128 · Σw: Σ xq·w = Σ xu·w − 128·Σ w. Integer sums are exact, so the result does not depend
 * on the blocking, and equals the scalar spec bit for bit. */
typedef struct {
  const mk_isa *isa;
  float *out;
  const uint8_t *xu;
  const float *xs;
  const int8_t *w;
  const float *ws;
  int64_t ldo, ldw, n, k;
} matmul_i8_job;

/* xq as xu = xq + 128 (unsigned, rows packed at stride k), padded for the kernels' full-vector reads. */
static uint8_t *to_unsigned(const int8_t *xq, int64_t ldx, int64_t n, int64_t k) {
  uint8_t *xu = aligned_alloc(64, (size_t)((n * k + 63) / 64 * 64) + 64);
  if (xu == NULL) return NULL;
  for (int64_t t = 0; t < n; t++)
    for (int64_t c = 0; c < k; c++) xu[t * k + c] = (uint8_t)(xq[t * ldx + c] + 128);
  return xu;
}

#define K_BLOCK 1024 /* bytes of k per pass: a 6-row weight tile block (6 KiB) stays in L1 across activation tiles */

/* The rows [t0, t_end) of one activation block against 6 weight rows, in tiles of 4 rows and a last one of 1 to 3,
 * k walked in K_BLOCK slices with the accumulators kept in memory: each weight row is read from memory once. The
 * next weight tile (`next`, null for none) is prefetched spread over the activation tiles, as the BF16 GEMM does:
 * without, a batch-32 1024 x 1024 call waited on its weights (cold, alternated: 112 -> 76 us a call). */
static void matmul_i8_blocked(const matmul_i8_job *j, int64_t t0, int64_t t_end, int64_t o, const int32_t *wsum,
                              int32_t *lanes, const int8_t *next) {
  int64_t x_tiles = (t_end - t0 + 3) / 4;
  for (int64_t kb = 0; kb < j->k; kb += K_BLOCK) {
    int64_t len = j->k - kb < K_BLOCK ? j->k - kb : K_BLOCK;
    int last = kb + len == j->k;
    for (int64_t t = t0; t < t_end; t += 4) {
      int64_t mr = t_end - t < 4 ? t_end - t : 4;
      if (next != NULL) prefetch_rows((const char *)(next + kb), (size_t)j->ldw, MK_I8_NR, (size_t)len, (t - t0) / 4, x_tiles);
      mk_i8_scale scale = {j->out + t * j->ldo + o, j->ldo, j->xs + t, j->ws + o, wsum};
      j->isa->gemm_u8i8_tile(lanes + (t - t0) * MK_I8_NR * 16, kb == 0, last ? &scale : NULL, j->xu + t * j->k + kb,
                             j->k, j->w + o * j->ldw + kb, j->ldw, len, mr);
    }
  }
}

static void matmul_i8_range(void *raw, int64_t o_begin, int64_t o_end) {
  matmul_i8_job *j = raw;
  int32_t acc[MK_I8_ROWS * MK_I8_NR];
  /* Few rows (decode; a routed expert's share of a batch): weight rows one after another, a single sequential
   * stream for the prefetcher, each run against up to MK_I8_ROWS activation rows while it is in L1 (one row: the
   * GEMV, a weight row per call; with rows_u8i8_scaled 16 rows a call, scaled in vectors: see docs/performance.md,
   * session 17). More rows: 6-weight-row GEMM tiles over k blocks. */
  int few = j->n <= I8_FEW_ROWS, scaled = few && j->isa->rows_u8i8_scaled != NULL;
  int64_t tile = scaled ? 16 : j->n == 1 ? 1 : MK_I8_NR, pass = few ? MK_I8_ROWS : TILE;
  int32_t *lanes = NULL, *rowsums = malloc(sizeof(int32_t) * (size_t)(o_end - o_begin + MK_I8_NR));
  if (rowsums == NULL) abort(); /* 4 bytes a row */
  if (j->isa->gemm_u8i8_tile != NULL && !few) {
    lanes = aligned_alloc(64, sizeof(int32_t) * (X_BLOCK / 4) * 4 * MK_I8_NR * 16);
    if (lanes == NULL) abort(); /* 24 KiB */
  }
  for (int64_t t0 = 0; t0 < j->n; t0 += X_BLOCK) {
    int64_t t_end = t0 + X_BLOCK < j->n ? t0 + X_BLOCK : j->n;
    for (int64_t o = o_begin; o < o_end; o += tile) {
      int64_t nr = o_end - o < tile ? o_end - o : tile;
      const int8_t *w = j->w + o * j->ldw;
      int32_t *wsum = rowsums + (o - o_begin);
      if (lanes != NULL && nr == MK_I8_NR) {
        /* the weight rows' sums, once (the first activation block), in a pass of their own */
        if (t0 == 0) j->isa->dot_u8i8_tile(acc, wsum, j->xu, j->k, w, j->ldw, 0, nr, j->k);
        matmul_i8_blocked(j, t0, t_end, o, wsum, lanes, o_end - (o + nr) >= MK_I8_NR ? w + nr * j->ldw : NULL);
        continue;
      }
      for (int64_t t = t0; t < t_end; t += pass) {
        int64_t mr = t_end - t < pass ? t_end - t : pass;
        if (scaled) {
          j->isa->rows_u8i8_scaled(j->out + t * j->ldo + o, j->ldo, j->xs + t, j->ws + o, wsum, t == 0,
                                   j->xu + t * j->k, j->k, w, j->ldw, mr, nr, j->k);
          continue;
        }
        j->isa->dot_u8i8_tile(acc, t == 0 ? wsum : NULL, j->xu + t * j->k, j->k, w, j->ldw, mr, nr, j->k);
        for (int64_t r = 0; r < mr; r++)
          for (int64_t c = 0; c < nr; c++) {
            int32_t dot = (int32_t)((uint32_t)acc[r * MK_I8_NR + c] - 128u * (uint32_t)wsum[c]);
            j->out[(t + r) * j->ldo + o + c] = (float)dot * j->xs[t + r] * j->ws[o + c];
          }
      }
    }
  }
  free(lanes);
  free(rowsums);
}

MK_EXPORT int32_t mk_matmul_i8(mk_context *ctx, float *out, int64_t ldo, const int8_t *xq, int64_t ldx,
                               const float *xs, const int8_t *w, int64_t ldw, const float *ws, int64_t n, int64_t m,
                               int64_t k) {
  if (ctx == NULL || out == NULL || xq == NULL || xs == NULL || w == NULL || ws == NULL) return MK_E_NULL;
  if (n < 0 || m < 0 || k < 0 || ldo < m || ldx < k || ldw < k) return MK_E_SHAPE;
  uint8_t *xu = to_unsigned(xq, ldx, n, k);
  if (xu == NULL) return MK_E_NOMEM;
  matmul_i8_job j = {ctx->isa, out, xu, xs, w, ws, ldo, ldw, n, k};
  mk_parallel_for(ctx, m, 2 * MK_I8_NR, m * k + n * m * k / 8, matmul_i8_range, &j);
  free(xu);
  return MK_OK;
}

/* ---- grouped A8W8 matmul ----
 * Each non-empty group is an mk_matmul_i8 job over its own rows; the work items are (group, weight row) pairs,
 * numbered group-major, so one mk_parallel_for hands every thread a contiguous run of weight rows that may span
 * groups. Each piece runs matmul_i8_range on its group's job, so a row's arithmetic (GEMV below GEMV_ROWS rows
 * of the group, 4 x 6 tiles otherwise; exact integer sums either way) is mk_matmul_i8's. */
typedef struct {
  const matmul_i8_job *jobs; /* one per non-empty group */
  int64_t m;
} grouped_i8_job;

static void grouped_i8_range(void *raw, int64_t begin, int64_t end) {
  const grouped_i8_job *g = raw;
  while (begin < end) {
    int64_t group = begin / g->m, group_end = (group + 1) * g->m, stop = group_end < end ? group_end : end;
    matmul_i8_range((void *)&g->jobs[group], begin - group * g->m, stop - group * g->m);
    begin = stop;
  }
}

MK_EXPORT int32_t mk_matmul_i8_grouped(mk_context *ctx, float *out, int64_t ldo, const int8_t *xq, int64_t ldx,
                                       const float *xs, const int32_t *row_offsets, int64_t groups,
                                       const int8_t *const *w, int64_t ldw, const float *const *ws, int64_t m,
                                       int64_t k) {
  if (ctx == NULL || out == NULL || xq == NULL || xs == NULL || row_offsets == NULL) return MK_E_NULL;
  if (groups < 0 || m < 0 || k < 0 || ldo < m || ldx < k || ldw < k) return MK_E_SHAPE;
  if (groups > 0 && (w == NULL || ws == NULL)) return MK_E_NULL;
  if (row_offsets[0] != 0) return MK_E_INDEX;
  int64_t used = 0;
  for (int64_t g = 0; g < groups; g++) {
    if (row_offsets[g + 1] < row_offsets[g]) return MK_E_INDEX;
    if (row_offsets[g + 1] == row_offsets[g]) continue;
    if (w[g] == NULL || ws[g] == NULL) return MK_E_NULL;
    used++;
  }
  int64_t n = row_offsets[groups];
  if (used == 0 || m == 0) return MK_OK;
  uint8_t *xu = to_unsigned(xq, ldx, n, k);
  matmul_i8_job *jobs = malloc(sizeof(matmul_i8_job) * (size_t)used);
  if (xu == NULL || jobs == NULL) {
    free(xu);
    free(jobs);
    return MK_E_NOMEM;
  }
  used = 0;
  for (int64_t g = 0; g < groups; g++) {
    int64_t t0 = row_offsets[g], rows = row_offsets[g + 1] - t0;
    if (rows > 0)
      jobs[used++] = (matmul_i8_job){ctx->isa, out + t0 * ldo, xu + t0 * k, xs + t0, w[g], ws[g], ldo, ldw, rows, k};
  }
  grouped_i8_job j = {jobs, m};
  mk_parallel_for(ctx, used * m, 2 * MK_I8_NR, used * m * k + n * m * k / 8, grouped_i8_range, &j);
  free(jobs);
  free(xu);
  return MK_OK;
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
