/* Causal attention over explicit K/V (naive MLA, for prompt tokens) and the elementwise add. Softmax is the
 * ordinary max-subtracting one in F32, as DeepSeek's reference (softmax(dtype=float32)). A unit of work is one head
 * of up to UNIT_ROWS query rows: their scores by the matmul tiles (each score its own dot-product chain), each row's
 * softmax, then the rows' weighted sums of values, each output in position order. So a row's results are
 * independent of the rows beside it and of the threads. */
#include "mk_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Query rows of one head per unit: each key and value row brought from L2/L3 serves them all, from L1 (a head's keys
 * and values outgrow L2 past ~1,500 positions). The values go in blocks of VALUE_BLOCK positions, every 4-row group of
 * the unit over one block before the next. */
#define UNIT_ROWS (4 * MK_ATTENTION_ROWS)
#define VALUE_BLOCK 64

typedef struct {
  const mk_isa *isa;
  float *out;
  const float *q, *k, *v;
  int64_t ldo, ldq, ldk, ldv, nq, heads, dqk, dv, nk, tiles;
  const int32_t *context_lens;
  float scale;
} attention_job;

/* Unit u is row tile i = u % tiles of head u / tiles: one head's keys and values stay in cache over its tiles. The
 * tiles are taken 0, last, 1, last - 1, ...: a causal prompt's later rows see more keys, so every run of units,
 * whichever thread takes it, mixes short rows and long. */
/* A part's scratch: scores, one value block, and the current head's keys and the unit's query rows packed. In place
 * a head's rows lie heads · dqk floats apart (12 KiB for 16 heads of 192: every row on the same L1 sets); packed, a
 * 512-token prompt's attention over 16 heads took 0.68-0.90x the time (Zen 3, AVX2, 1 thread, 4 alternations). */
typedef struct {
  float *s, *vb, *kb, *qb;
  int64_t head, keys; /* kb holds keys [0, keys) of head `head` */
} attention_scratch;

static void attention_unit(const attention_job *j, int64_t u, attention_scratch *w) {
  float *s = w->s, *vb = w->vb;
  int64_t i = u % j->tiles, h = u / j->tiles;
  int64_t tile = i % 2 == 0 ? i / 2 : j->tiles - 1 - i / 2, t0 = tile * UNIT_ROWS;
  int64_t rows = j->nq - t0 < UNIT_ROWS ? j->nq - t0 : UNIT_ROWS, counts[UNIT_ROWS], longest[UNIT_ROWS / MK_ATTENTION_ROWS];
  int64_t groups = (rows + MK_ATTENTION_ROWS - 1) / MK_ATTENTION_ROWS, most = 0;
  for (int64_t g = 0; g < groups; g++) longest[g] = 0;
  for (int64_t r = 0; r < rows; r++) {
    counts[r] = j->context_lens[t0 + r];
    int64_t *l = &longest[r / MK_ATTENTION_ROWS];
    if (counts[r] > *l) *l = counts[r];
    if (counts[r] > most) most = counts[r];
  }
  /* head h's query rows, keys and values: every heads-th row of q, k and v; queries and keys packed */
  int64_t ldv = j->heads * j->ldv, ldo = j->heads * j->ldo, ldq = j->dqk, ldk = j->dqk, row = sizeof(float) * (size_t)j->dqk;
  const float *v = j->v + h * j->ldv;
  if (w->head != h) w->head = h, w->keys = 0;
  for (; w->keys < most; w->keys++) memcpy(w->kb + w->keys * ldk, j->k + (w->keys * j->heads + h) * j->ldk, row);
  for (int64_t r = 0; r < rows; r++) memcpy(w->qb + r * ldq, j->q + ((t0 + r) * j->heads + h) * j->ldq, row);
  const float *q = w->qb, *k = w->kb;
  float *o = j->out + (t0 * j->heads + h) * j->ldo;
  for (int64_t p = 0; p < most; p += 4) /* a group's scores past a row's own length are computed and never read */
    for (int64_t g = 0; g < groups; g++) {
      int64_t r0 = g * MK_ATTENTION_ROWS, mr = rows - r0 < MK_ATTENTION_ROWS ? rows - r0 : MK_ATTENTION_ROWS;
      if (p < longest[g])
        j->isa->matmul_tile(s + r0 * j->nk + p, j->nk, q + r0 * ldq, ldq, k + p * ldk, 0, ldk, mr,
                            longest[g] - p < 4 ? longest[g] - p : 4, j->dqk);
    }
  for (int64_t r = 0; r < rows; r++) j->isa->softmax(s + r * j->nk, counts[r], j->scale);
  for (int64_t p = 0; p < most; p += VALUE_BLOCK) {
    /* the block's value rows packed together (vb row p = v row p): in place they lie heads · dv floats apart, a
     * stride whose rows share a few L1 sets, and the groups would fetch them again from L2 */
    for (int64_t i = p; i < most && i < p + VALUE_BLOCK; i++) memcpy(vb + i * j->dv, v + i * ldv, sizeof(float) * (size_t)j->dv);
    for (int64_t g = 0; g < groups; g++) {
      int64_t r0 = g * MK_ATTENTION_ROWS, mr = rows - r0 < MK_ATTENTION_ROWS ? rows - r0 : MK_ATTENTION_ROWS;
      j->isa->weighted_rows(o + r0 * ldo, ldo, s + r0 * j->nk, j->nk, vb, j->dv, mr, counts + r0, j->dv, p, p + VALUE_BLOCK);
    }
  }
}

static void attention_range(void *raw, int64_t begin, int64_t end) {
  const attention_job *j = raw;
  attention_scratch w = {malloc(sizeof(float) * (size_t)(UNIT_ROWS * j->nk)), malloc(sizeof(float) * (size_t)(j->nk * j->dv)),
                         malloc(sizeof(float) * (size_t)(j->nk * j->dqk)), malloc(sizeof(float) * (size_t)(UNIT_ROWS * j->dqk)),
                         -1, 0};
  if (w.s == NULL || w.vb == NULL || w.kb == NULL || w.qb == NULL) mk_part_nomem();
  else
    for (int64_t u = begin; u < end; u++) attention_unit(j, u, &w);
  free(w.s);
  free(w.vb);
  free(w.kb);
  free(w.qb);
}

MK_EXPORT int32_t mk_attention(mk_context *ctx, float *out, int64_t ldo, const float *q, int64_t ldq, const float *k,
                               int64_t ldk, const float *v, int64_t ldv, int64_t nq, int64_t nk, int64_t heads,
                               int64_t dqk, int64_t dv, const int32_t *context_lens, float scale) {
  if (ctx == NULL || out == NULL || q == NULL || k == NULL || v == NULL || context_lens == NULL) return MK_E_NULL;
  if (nq < 0 || nk < 0 || heads < 1 || dqk < 1 || dv < 1 || ldo < dv || ldq < dqk || ldk < dqk || ldv < dv)
    return MK_E_SHAPE;
  for (int64_t t = 0; t < nq; t++)
    if (context_lens[t] < 1 || context_lens[t] > nk) return MK_E_INDEX;
  int64_t tiles = (nq + UNIT_ROWS - 1) / UNIT_ROWS;
  attention_job j = {ctx->isa, out, q, k, v, ldo, ldq, ldk, ldv, nq, heads, dqk, dv, nk, tiles, context_lens, scale};
  int64_t work = nq * heads * nk * (dqk + dv) * 2;
  return mk_parallel_for(ctx, tiles * heads, 1, work, attention_range, &j);
}

MK_EXPORT int32_t mk_add(mk_context *ctx, float *out, int64_t ldo, const float *a, int64_t lda, const float *b,
                         int64_t ldb, int64_t n, int64_t d) {
  if (ctx == NULL || out == NULL || a == NULL || b == NULL) return MK_E_NULL;
  if (n < 0 || d < 0 || ldo < d || lda < d || ldb < d) return MK_E_SHAPE;
  for (int64_t t = 0; t < n; t++) {
    float *o = out + t * ldo;
    const float *x = a + t * lda, *y = b + t * ldb;
    for (int64_t c = 0; c < d; c++) o[c] = x[c] + y[c];
  }
  return MK_OK;
}
