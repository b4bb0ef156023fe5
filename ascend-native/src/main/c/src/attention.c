/* Causal attention over explicit K/V (naive MLA, for prompt tokens) and the elementwise add. Softmax is the
 * ordinary max-subtracting one in F32, as DeepSeek's reference (softmax(dtype=float32)). A unit of work is one head
 * of up to MK_ATTENTION_ROWS query rows: their scores by the matmul tiles (each score its own dot-product chain), each
 * row's softmax, then the rows' weighted sums of values, each output in position order. So a row's results are
 * independent of the rows beside it and of the threads. */
#include "mk_internal.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
  const mk_isa *isa;
  float *out;
  const float *q, *k, *v;
  int64_t ldo, ldq, ldk, ldv, nq, heads, dqk, dv, nk, tiles;
  const int32_t *context_lens;
  float scale;
} attention_job;

/* Unit u is row tile i = u % tiles of head u / tiles: one head's keys and values stay in L2 over its tiles. The tiles
 * are taken 0, last, 1, last - 1, ...: a causal prompt's later rows see more keys, so every run of units, whichever
 * thread takes it, mixes short rows and long. */
static void attention_unit(const attention_job *j, int64_t u, float *s) {
  int64_t i = u % j->tiles, h = u / j->tiles;
  int64_t tile = i % 2 == 0 ? i / 2 : j->tiles - 1 - i / 2, t0 = tile * MK_ATTENTION_ROWS;
  int64_t mr = j->nq - t0 < MK_ATTENTION_ROWS ? j->nq - t0 : MK_ATTENTION_ROWS, counts[MK_ATTENTION_ROWS], longest = 0;
  for (int64_t r = 0; r < mr; r++) {
    counts[r] = j->context_lens[t0 + r];
    if (counts[r] > longest) longest = counts[r];
  }
  /* head h's query rows, keys and values: every heads-th row of q, k and v */
  const float *q = j->q + (t0 * j->heads + h) * j->ldq, *k = j->k + h * j->ldk, *v = j->v + h * j->ldv;
  int64_t ldq = j->heads * j->ldq, ldk = j->heads * j->ldk;
  for (int64_t p = 0; p < longest; p += 4) /* scores past a row's own length are computed and never read */
    j->isa->matmul_tile(s + p, j->nk, q, ldq, k + p * ldk, 0, ldk, mr, longest - p < 4 ? longest - p : 4, j->dqk);
  for (int64_t r = 0; r < mr; r++) j->isa->softmax(s + r * j->nk, counts[r], j->scale);
  j->isa->weighted_rows(j->out + (t0 * j->heads + h) * j->ldo, j->heads * j->ldo, s, j->nk, v, j->heads * j->ldv, mr,
                        counts, j->dv);
}

static void attention_range(void *raw, int64_t begin, int64_t end) {
  const attention_job *j = raw;
  float *s = malloc(sizeof(float) * (size_t)(MK_ATTENTION_ROWS * j->nk));
  if (s == NULL) abort(); /* MK_ATTENTION_ROWS · nk floats; failure means the process is already lost */
  for (int64_t u = begin; u < end; u++) attention_unit(j, u, s);
  free(s);
}

MK_EXPORT int32_t mk_attention(mk_context *ctx, float *out, int64_t ldo, const float *q, int64_t ldq, const float *k,
                               int64_t ldk, const float *v, int64_t ldv, int64_t nq, int64_t nk, int64_t heads,
                               int64_t dqk, int64_t dv, const int32_t *context_lens, float scale) {
  if (ctx == NULL || out == NULL || q == NULL || k == NULL || v == NULL || context_lens == NULL) return MK_E_NULL;
  if (nq < 0 || nk < 0 || heads < 1 || dqk < 1 || dv < 1 || ldo < dv || ldq < dqk || ldk < dqk || ldv < dv)
    return MK_E_SHAPE;
  for (int64_t t = 0; t < nq; t++)
    if (context_lens[t] < 1 || context_lens[t] > nk) return MK_E_INDEX;
  int64_t tiles = (nq + MK_ATTENTION_ROWS - 1) / MK_ATTENTION_ROWS;
  attention_job j = {ctx->isa, out, q, k, v, ldo, ldq, ldk, ldv, nq, heads, dqk, dv, nk, tiles, context_lens, scale};
  int64_t work = nq * heads * nk * (dqk + dv) * 2;
  mk_parallel_for(ctx, tiles * heads, 1, work, attention_range, &j);
  return MK_OK;
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
