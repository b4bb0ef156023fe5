/* DeepSeek-V3's MoE gate (sigmoid scoring, noaux_tc group-limited routing). Scalar: E is at most a few
 * hundred per token and the ordering rules (ties to the lower id) matter more than speed here. */
#include "mk_internal.h"

#include <math.h>
#include <stdlib.h>

/* Whether candidate a ranks before b: higher score first, then lower index. */
static int ranks_before(float score_a, int32_t a, float score_b, int32_t b) {
  return score_a > score_b || (score_a == score_b && a < b);
}

/* Indices of the `k` best of scores[0..n) (skipping those with keep[i] == 0), best first. */
static void top_k(int32_t *out, const float *scores, const uint8_t *keep, int32_t n, int32_t k) {
  int32_t found = 0;
  for (int32_t i = 0; i < n; i++) {
    if (keep != NULL && !keep[i]) continue;
    int32_t at = found < k ? found++ : k;
    if (at == k && !ranks_before(scores[i], i, scores[out[k - 1]], out[k - 1])) continue;
    if (at == k) at = k - 1;
    while (at > 0 && ranks_before(scores[i], i, scores[out[at - 1]], out[at - 1])) {
      out[at] = out[at - 1];
      at--;
    }
    out[at] = i;
  }
}

typedef struct {
  int32_t *ids;
  float *weights;
  const float *logits, *bias;
  int64_t ldl;
  int32_t experts, topk, n_group, topk_group, norm_topk_prob;
  float routed_scaling_factor;
} gate_job;

/* Tokens [begin, end): each on its own, so the split across threads changes no bit. */
static void gate_range(void *raw, int64_t begin, int64_t end) {
  const gate_job *j = raw;
  if (j->experts < 1) return; /* validated by the caller; says so to the compiler's size checks too */
  int32_t e_count = j->experts, per_group = e_count / j->n_group;
  size_t e_bytes = (size_t)e_count;
  float *original = malloc(sizeof(float) * (e_bytes * 2 + (size_t)j->n_group));
  uint8_t *keep = malloc(e_bytes);
  int32_t *best_groups = malloc(sizeof(int32_t) * (size_t)j->n_group);
  if (original == NULL || keep == NULL || best_groups == NULL) mk_part_nomem(), end = begin;
  float *scores = original + e_count, *group_scores = scores + e_count;
  for (int64_t t = begin; t < end; t++) {
    const float *row = j->logits + t * j->ldl;
    for (int32_t e = 0; e < e_count; e++) {
      original[e] = 1.0f / (1.0f + expf(-row[e]));
      scores[e] = j->bias != NULL ? original[e] + j->bias[e] : original[e];
    }
    memset(keep, 1, e_bytes);
    if (j->n_group > 1) {
      /* a group's score: the sum of its top-2 biased scores (noaux_tc), or its max without a bias */
      for (int32_t g = 0; g < j->n_group; g++) {
        int32_t top2[2];
        top_k(top2, scores + g * per_group, NULL, per_group, j->bias != NULL ? 2 : 1);
        group_scores[g] = scores[g * per_group + top2[0]];
        if (j->bias != NULL) group_scores[g] += scores[g * per_group + top2[1]];
      }
      top_k(best_groups, group_scores, NULL, j->n_group, j->topk_group);
      memset(keep, 0, e_bytes);
      for (int32_t i = 0; i < j->topk_group; i++) memset(keep + best_groups[i] * per_group, 1, (size_t)per_group);
    }
    int32_t *chosen = j->ids + t * j->topk;
    float *w = j->weights + t * j->topk;
    top_k(chosen, scores, keep, e_count, j->topk);
    float sum = 0;
    for (int32_t i = 0; i < j->topk; i++) {
      w[i] = original[chosen[i]];
      sum += w[i];
    }
    for (int32_t i = 0; i < j->topk; i++) w[i] = (j->norm_topk_prob ? w[i] / sum : w[i]) * j->routed_scaling_factor;
  }
  free(original), free(keep), free(best_groups);
}

MK_EXPORT int32_t mk_moe_gate(mk_context *ctx, int32_t *ids, float *weights, const float *logits, int64_t ldl,
                              const float *bias, int64_t n, int64_t experts, int32_t topk, int32_t n_group,
                              int32_t topk_group, int32_t norm_topk_prob, float routed_scaling_factor) {
  if (ctx == NULL || ids == NULL || weights == NULL || logits == NULL) return MK_E_NULL;
  if (n < 0 || experts < 1 || ldl < experts || n_group < 1 || experts % n_group != 0 || topk_group < 1 ||
      topk_group > n_group || topk < 1 || topk > experts / n_group * topk_group)
    return MK_E_SHAPE;
  if (n_group > 1 && bias != NULL && experts / n_group < 2) return MK_E_SHAPE;
  gate_job j = {ids, weights, logits, bias, ldl, (int32_t)experts, topk, n_group, topk_group, norm_topk_prob,
                routed_scaling_factor};
  return mk_parallel_for(ctx, n, 1, n * experts * 64, gate_range, &j); /* ~20 ns a sigmoid: split from a few tokens on */
}
