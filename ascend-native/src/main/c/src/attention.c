/* Causal attention over explicit K/V (naive MLA, for prompt tokens) and the elementwise add. Softmax is the
 * ordinary max-subtracting one in F32, as DeepSeek's reference (softmax(dtype=float32)); each (row, head)
 * walks its keys in order, so results are independent of threads and of the other rows. */
#include "mk_internal.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
  const mk_isa *isa;
  float *out;
  const float *q, *k, *v;
  int64_t ldo, ldq, ldk, ldv, heads, dqk, dv, nk;
  const int32_t *context_lens;
  float scale;
} attention_job;

static void attention_range(void *raw, int64_t begin, int64_t end) {
  const attention_job *j = raw;
  float *scores = malloc(sizeof(float) * (size_t)(j->nk > 0 ? j->nk : 1));
  if (scores == NULL) abort(); /* nk floats; failure means the process is already lost */
  for (int64_t row = begin; row < end; row++) {
    int64_t t = row / j->heads, h = row % j->heads, len = j->context_lens[t];
    const float *q = j->q + row * j->ldq;
    float max = -INFINITY;
    for (int64_t p = 0; p < len; p++) {
      scores[p] = j->isa->dot_f32(q, j->k + (p * j->heads + h) * j->ldk, j->dqk) * j->scale;
      if (scores[p] > max) max = scores[p];
    }
    float sum = 0;
    for (int64_t p = 0; p < len; p++) {
      scores[p] = expf(scores[p] - max);
      sum += scores[p];
    }
    float *o = j->out + row * j->ldo;
    memset(o, 0, sizeof(float) * (size_t)j->dv);
    for (int64_t p = 0; p < len; p++) j->isa->axpy(o, scores[p] / sum, j->v + (p * j->heads + h) * j->ldv, j->dv);
  }
  free(scores);
}

MK_EXPORT int32_t mk_attention(mk_context *ctx, float *out, int64_t ldo, const float *q, int64_t ldq, const float *k,
                               int64_t ldk, const float *v, int64_t ldv, int64_t nq, int64_t nk, int64_t heads,
                               int64_t dqk, int64_t dv, const int32_t *context_lens, float scale) {
  if (ctx == NULL || out == NULL || q == NULL || k == NULL || v == NULL || context_lens == NULL) return MK_E_NULL;
  if (nq < 0 || nk < 0 || heads < 1 || dqk < 1 || dv < 1 || ldo < dv || ldq < dqk || ldk < dqk || ldv < dv)
    return MK_E_SHAPE;
  for (int64_t t = 0; t < nq; t++)
    if (context_lens[t] < 1 || context_lens[t] > nk) return MK_E_INDEX;
  attention_job j = {ctx->isa, out, q, k, v, ldo, ldq, ldk, ldv, heads, dqk, dv, nk, context_lens, scale};
  int64_t work = nq * heads * nk * (dqk + dv) * 2;
  mk_parallel_for(ctx, nq * heads, 1, work, attention_range, &j);
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
