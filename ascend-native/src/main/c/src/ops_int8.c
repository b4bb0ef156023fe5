/* The INT8 ops of the ABI: per-row quantization and the A8W8 matmul, plain and grouped (a decode step's routed experts
 * in one call). Each splits weight rows or activation rows across threads and loops over the ISA's tiles. */
#include "mk_internal.h"

#include <stdlib.h>

#define I8_TILE_ROWS 4 /* activation rows of a gemm_u8i8_tile */
/* Up to this many activation rows A8W8 takes weight rows one at a time (MK_I8_ROWS activation rows per pass); from
 * 10 rows on the 6-row GEMM tiles were as fast or faster (measured on 512 x 1024 and 1024 x 512 experts). */
#define I8_FEW_ROWS 9

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

/* xq as the ISA's tiles take it, rows packed at stride k and padded for full-vector reads: xu = xq + 128 (unsigned),
 * or xq itself for tiles that take signed activations (i8_signed_x). */
static uint8_t *to_unsigned(const mk_isa *isa, const int8_t *xq, int64_t ldx, int64_t n, int64_t k) {
  uint8_t *xu = aligned_alloc(64, (size_t)((n * k + 63) / 64 * 64) + 64);
  if (xu == NULL) return NULL;
  uint8_t bias = isa->i8_signed_x ? 0 : 128;
  for (int64_t t = 0; t < n; t++)
    for (int64_t c = 0; c < k; c++) xu[t * k + c] = (uint8_t)(xq[t * ldx + c] + bias);
  return xu;
}

#define K_BLOCK 1024 /* bytes of k per pass: a 6-row weight tile block (6 KiB) stays in L1 across activation tiles */

/* The rows [t0, t_end) of one activation block against 6 weight rows, in tiles of 4 rows (3 on widened weights)
 * and a last smaller one, k walked in K_BLOCK slices with the accumulators kept in memory: each weight row is read
 * from memory once (and widened once a block, into w16, where the ISA's tile wants that). The next weight tile
 * (`next`, null for none) is prefetched spread over the activation tiles, as the BF16 GEMM does: without, a batch-32
 * 1024 x 1024 call waited on its weights (cold, alternated: 112 -> 76 us a call). */
static void matmul_i8_blocked(const matmul_i8_job *j, int64_t t0, int64_t t_end, int64_t o, const int32_t *wsum,
                              int32_t *lanes, int16_t *w16, const int8_t *next) {
  const int64_t rows = w16 != NULL ? MK_I8_WIDE_ROWS : I8_TILE_ROWS, x_tiles = (t_end - t0 + rows - 1) / rows;
  const int8_t *w = j->w + o * j->ldw;
  for (int64_t kb = 0; kb < j->k; kb += K_BLOCK) {
    int64_t len = j->k - kb < K_BLOCK ? j->k - kb : K_BLOCK;
    int last = kb + len == j->k;
    if (w16 != NULL) j->isa->widen_i8_rows(w16, K_BLOCK, w + kb, j->ldw, MK_I8_NR, len);
    for (int64_t t = t0; t < t_end; t += rows) {
      int64_t mr = t_end - t < rows ? t_end - t : rows;
      if (next != NULL)
        mk_prefetch_rows((const char *)(next + kb), (size_t)j->ldw, MK_I8_NR, (size_t)len, (t - t0) / rows, x_tiles);
      mk_i8_scale scale = {j->out + t * j->ldo + o, j->ldo, j->xs + t, j->ws + o, wsum};
      /* with one block a tile's sums live only within its call, so every tile uses the first slot: kept in L1, where
       * a slot per tile (48 KiB for 128 rows) took the tile from 0.71-0.72 of the INT8 peak to 0.64-0.66 (Zen 3) */
      int32_t *tile_lanes = lanes + (j->k <= K_BLOCK ? 0 : (t - t0) * MK_I8_NR * 16);
      const uint8_t *x = j->xu + t * j->k + kb;
      if (w16 != NULL)
        j->isa->gemm_i8_w16_tile(tile_lanes, kb == 0, last ? &scale : NULL, (const int8_t *)x, j->k, w16, K_BLOCK,
                                 len, mr);
      else
        j->isa->gemm_u8i8_tile(tile_lanes, kb == 0, last ? &scale : NULL, x, j->k, w + kb, j->ldw, len, mr);
    }
  }
}

static void matmul_i8_range(void *raw, int64_t o_begin, int64_t o_end) {
  matmul_i8_job *j = raw;
  int32_t acc[MK_I8_ROWS * MK_I8_NR];
  /* Few rows (decode; a routed expert's share of a batch): weight rows one after another, a single sequential
   * stream for the prefetcher, each run against up to MK_I8_ROWS activation rows while it is in L1 (one row: the
   * GEMV, a weight row per call; with rows_u8i8_scaled 16 rows a call, scaled in vectors: see docs/performance.md,
   * "Kernels"). More rows: 6-weight-row GEMM tiles over k blocks. */
  /* Signed-activation tiles (i8_signed_x) take every row that is not a whole GEMM tile through rows_u8i8_scaled. */
  int few = j->n <= I8_FEW_ROWS, scaled = (few || j->isa->i8_signed_x) && j->isa->rows_u8i8_scaled != NULL;
  int64_t tile = few && scaled ? 16 : j->n == 1 ? 1 : MK_I8_NR, pass = scaled || few ? MK_I8_ROWS : I8_TILE_ROWS;
  int32_t *lanes = NULL, *rowsums = malloc(sizeof(int32_t) * (size_t)(o_end - o_begin + MK_I8_NR));
  int16_t *w16 = NULL;
  int wide = j->isa->gemm_i8_w16_tile != NULL, tiles = (wide || j->isa->gemm_u8i8_tile != NULL) && !few;
  if (tiles) lanes = aligned_alloc(64, sizeof(int32_t) * MK_X_BLOCK * MK_I8_NR * 16); /* 48 KiB */
  if (tiles && wide) w16 = aligned_alloc(64, sizeof(int16_t) * MK_I8_NR * K_BLOCK);   /* 12 KiB */
  if (rowsums == NULL || (tiles && lanes == NULL) || (wide && tiles && w16 == NULL)) mk_part_nomem(), o_end = o_begin;
  for (int64_t t0 = 0; t0 < j->n; t0 += MK_X_BLOCK) {
    int64_t t_end = t0 + MK_X_BLOCK < j->n ? t0 + MK_X_BLOCK : j->n;
    for (int64_t o = o_begin; o < o_end; o += tile) {
      int64_t nr = o_end - o < tile ? o_end - o : tile;
      const int8_t *w = j->w + o * j->ldw;
      int32_t *wsum = rowsums + (o - o_begin);
      if (lanes != NULL && nr == MK_I8_NR && j->k > 0) { /* (k = 0: the tiles below write the zero products) */
        /* the weight rows' sums, once (the first activation block), in a pass of their own */
        if (t0 == 0 && !j->isa->i8_signed_x) j->isa->dot_u8i8_tile(acc, wsum, j->xu, j->k, w, j->ldw, 0, nr, j->k);
        matmul_i8_blocked(j, t0, t_end, o, wsum, lanes, w16, o_end - (o + nr) >= MK_I8_NR ? w + nr * j->ldw : NULL);
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
  free(w16);
  free(lanes);
  free(rowsums);
}

MK_EXPORT int32_t mk_matmul_i8(mk_context *ctx, float *out, int64_t ldo, const int8_t *xq, int64_t ldx,
                               const float *xs, const int8_t *w, int64_t ldw, const float *ws, int64_t n, int64_t m,
                               int64_t k) {
  if (ctx == NULL || out == NULL || xq == NULL || xs == NULL || w == NULL || ws == NULL) return MK_E_NULL;
  if (n < 0 || m < 0 || k < 0 || ldo < m || ldx < k || ldw < k) return MK_E_SHAPE;
  uint8_t *xu = to_unsigned(ctx->isa, xq, ldx, n, k);
  if (xu == NULL) return MK_E_NOMEM;
  matmul_i8_job j = {ctx->isa, out, xu, xs, w, ws, ldo, ldw, n, k};
  int32_t rc = mk_parallel_for(ctx, m, 2 * MK_I8_NR, m * k + n * m * k / 8, matmul_i8_range, &j);
  free(xu);
  return rc;
}

/* ---- grouped A8W8 matmul ----
 * Each non-empty group is an mk_matmul_i8 job over its own rows; the work items are (group, weight row) pairs,
 * numbered group-major, so one mk_parallel_for hands every thread a contiguous run of weight rows that may span
 * groups. Each piece runs matmul_i8_range on its group's job, so a row's arithmetic (the few-row kernel up to
 * I8_FEW_ROWS rows of the group, 4 x 6 tiles otherwise; exact integer sums either way) is mk_matmul_i8's. */
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
  uint8_t *xu = to_unsigned(ctx->isa, xq, ldx, n, k);
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
  int32_t rc = mk_parallel_for(ctx, used * m, 2 * MK_I8_NR, used * m * k + n * m * k / 8, grouped_i8_range, &j);
  free(jobs);
  free(xu);
  return rc;
}
