/* Contract checks of the prompt attention, MLA decode and the ABI's error codes. */
#include "contract_check.h"

/* ------------------------------------------------------------------------------------------------ attention */

/* out[t,h] = Σ_{j < len[t]} softmax_j(q[t,h]·k[j,h] · scale) · v[j,h], all in double; |error| <= 1e-5 · max|v|. */
void check_attention(int64_t nq, int64_t nk, int64_t heads, int64_t dqk, int64_t dv, float scale) {
  int64_t ldq = dqk + 1, ldk = dqk + 2, ldv = dv + 1, ldo = dv + 3;
  float *q = xmalloc(sizeof(float) * (size_t)(nq * heads * ldq)), *k = xmalloc(sizeof(float) * (size_t)(nk * heads * ldk));
  float *v = xmalloc(sizeof(float) * (size_t)(nk * heads * ldv));
  int32_t *len = xmalloc(sizeof(int32_t) * (size_t)nq);
  seed((uint64_t)(nq * 7 + nk * 3 + heads + dqk * 11 + dv * 13));
  for (int64_t i = 0; i < nq * heads * ldq; i++) q[i] = (float)uniform(-1, 1);
  for (int64_t i = 0; i < nk * heads * ldk; i++) k[i] = (float)uniform(-1, 1);
  for (int64_t i = 0; i < nk * heads * ldv; i++) v[i] = (float)uniform(-1, 1);
  for (int64_t t = 0; t < nq; t++) len[t] = (int32_t)(nk - nq + t + 1); /* causal, after a prefix of nk - nq */
  float *o1 = out_f32(nq * heads, ldo), *o3 = out_f32(nq * heads, ldo);
  int rc1 = mk_attention(g_c1, o1, ldo, q, ldq, k, ldk, v, ldv, nq, nk, heads, dqk, dv, len, scale);
  int rc3 = mk_attention(g_c3, o3, ldo, q, ldq, k, ldk, v, ldv, nq, nk, heads, dqk, dv, len, scale);
  double worst = 0, vmax = 0;
  for (int64_t j = 0; j < nk * heads; j++)
    for (int64_t c = 0; c < dv; c++) vmax = fmax(vmax, fabs(v[j * ldv + c]));
  double *s = xmalloc(sizeof(double) * (size_t)nk);
  for (int64_t t = 0; t < nq; t++)
    for (int64_t h = 0; h < heads; h++) {
      const float *qr = q + (t * heads + h) * ldq;
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < len[t]; j++) {
        const float *kr = k + (j * heads + h) * ldk;
        double dot = 0;
        for (int64_t c = 0; c < dqk; c++) dot += (double)qr[c] * kr[c];
        s[j] = dot * scale;
        mx = fmax(mx, s[j]);
      }
      for (int64_t j = 0; j < len[t]; j++) s[j] = exp(s[j] - mx), sum += s[j];
      for (int64_t c = 0; c < dv; c++) {
        double e = 0;
        for (int64_t j = 0; j < len[t]; j++) e += s[j] / sum * v[(j * heads + h) * ldv + c];
        double err = fabs(o1[(t * heads + h) * ldo + c] - e) / (1e-5 * vmax);
        if (!(err <= worst)) worst = err;
      }
    }
  size_t bytes = sizeof(float) * (size_t)((nq * heads + 1) * ldo);
  report(rc1 == MK_OK && rc3 == MK_OK && worst <= 1 && gaps_intact_f32(o1, nq * heads, dv, ldo) && same_bits(o1, o3, bytes),
         "mk_attention causal nq=%lld nk=%lld heads=%lld dqk=%lld dv=%lld: rc %d/%d, max err %.3g of 1e-5*max|v|, 3 threads %s",
         (long long)nq, (long long)nk, (long long)heads, (long long)dqk, (long long)dv, rc1, rc3, worst,
         same_bits(o1, o3, bytes) ? "bit-identical" : "DIFFER");
  len[nq - 1] = (int32_t)nk + 1;
  memcpy(o3, o1, bytes);
  int rc = mk_attention(g_c1, o3, ldo, q, ldq, k, ldk, v, ldv, nq, nk, heads, dqk, dv, len, scale);
  report(rc == MK_E_INDEX && same_bits(o1, o3, bytes), "mk_attention context_len = nk + 1: rc %d (expected MK_E_INDEX), out untouched %s",
         rc, same_bits(o1, o3, bytes) ? "yes" : "NO");
  free(q), free(k), free(v), free(len), free(o1), free(o3), free(s);
}

/* ------------------------------------------------------------------------------------------------ MLA decode */

/* A paged latent cache: page p row r at ((p · page_size) + r) · width; rows c_kv ‖ k_pe. Query row t's position j is
 * in page block_table[t][j / page_size], row j % page_size. out[t,h] = Σ_j softmax_j(s) · c_kv[j] with
 * s_j = (q_latent[t,h]·c_kv[j] + q_rope[t,h]·k_pe[j]) · scale, in double.
 * q_bf16: q and pages BF16, the weights multiply the values rounded to BF16: each weight within 2^-9 relative of
 * its exact value, so |out - exact| <= 2^-9 · max|c_kv| (plus F32 rounding); the check allows 2^-8 · max|c_kv|. */
void check_mla(const char *name, int pages_dtype, int q_bf16, int64_t nq, int64_t heads, int64_t rank, int64_t rope,
                      int64_t page_size, const int32_t *lens, float softmax_scale) {
  int64_t width = rank + rope, max_pages = 0, num_pages = 0;
  for (int64_t t = 0; t < nq; t++) {
    int64_t p = (lens[t] + page_size - 1) / page_size;
    if (p > max_pages) max_pages = p;
    num_pages += p;
  }
  num_pages += 3; /* unused pages between */
  int64_t ldb = max_pages + 2, ldq = rank + 1, ldr = rope + 2, ldo = rank + 3;
  size_t es = pages_dtype == MK_BF16 ? 2 : 4, qs = q_bf16 ? 2 : 4;
  char *pages = xmalloc(es * (size_t)(num_pages * page_size * width));
  double *pv = xmalloc(sizeof(double) * (size_t)(num_pages * page_size * width)); /* the pages' values */
  seed((uint64_t)(nq * 1013 + heads * 7 + rank * 3 + rope + page_size * 17) + (uint64_t)pages_dtype * 5 + (uint64_t)q_bf16);
  for (int64_t i = 0; i < num_pages * page_size * width; i++) {
    if (pages_dtype == MK_BF16) {
      uint16_t h = rand_bf16(-1, 1);
      ((uint16_t *)pages)[i] = h;
      pv[i] = ref_bf16_to_f32(h);
    } else {
      float f = (float)uniform(-1, 1);
      ((float *)pages)[i] = f;
      pv[i] = f;
    }
  }
  /* block tables: a shuffled assignment of pages to (row, block) */
  int64_t *perm = xmalloc(sizeof(int64_t) * (size_t)num_pages);
  for (int64_t i = 0; i < num_pages; i++) perm[i] = i;
  for (int64_t i = num_pages - 1; i > 0; i--) {
    int64_t j = (int64_t)(next_u64() % (uint64_t)(i + 1)), tmp = perm[i];
    perm[i] = perm[j], perm[j] = tmp;
  }
  int32_t *table = xmalloc(sizeof(int32_t) * (size_t)(nq * ldb));
  int64_t used = 0;
  for (int64_t t = 0; t < nq; t++)
    for (int64_t b = 0; b < ldb; b++)
      table[t * ldb + b] = b < (lens[t] + page_size - 1) / page_size ? (int32_t)perm[used++] : -7; /* past: never read */
  char *ql = xmalloc(qs * (size_t)(nq * heads * ldq)), *qr = xmalloc(qs * (size_t)(nq * heads * ldr));
  for (int64_t i = 0; i < nq * heads * ldq; i++)
    if (q_bf16) ((uint16_t *)ql)[i] = rand_bf16(-1, 1);
    else ((float *)ql)[i] = (float)uniform(-1, 1);
  for (int64_t i = 0; i < nq * heads * ldr; i++)
    if (q_bf16) ((uint16_t *)qr)[i] = rand_bf16(-1, 1);
    else ((float *)qr)[i] = (float)uniform(-1, 1);
  int q_dtype = q_bf16 ? MK_BF16 : MK_F32;
  float *o1 = out_f32(nq * heads, ldo), *o3 = out_f32(nq * heads, ldo);
  int rc1 = mk_mla_decode(g_c1, o1, ldo, ql, ldq, qr, ldr, q_dtype, nq, heads, rank, rope, pages, pages_dtype, num_pages,
                          page_size, table, ldb, max_pages, lens, softmax_scale);
  int rc3 = mk_mla_decode(g_c3, o3, ldo, ql, ldq, qr, ldr, q_dtype, nq, heads, rank, rope, pages, pages_dtype, num_pages,
                          page_size, table, ldb, max_pages, lens, softmax_scale);
  double vmax = 0, worst = 0, tol = q_bf16 ? 0x1p-8 : 1e-4;
  for (int64_t i = 0; i < num_pages * page_size * width; i++)
    if (i % width < rank) vmax = fmax(vmax, fabs(pv[i]));
  int64_t longest = 0;
  for (int64_t t = 0; t < nq; t++) longest = lens[t] > longest ? lens[t] : longest;
  double *s = xmalloc(sizeof(double) * (size_t)longest);
  for (int64_t t = 0; t < nq && rc1 == MK_OK; t++)
    for (int64_t h = 0; h < heads; h++) {
      int64_t r = t * heads + h;
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < lens[t]; j++) {
        const double *row = pv + (table[t * ldb + j / page_size] * page_size + j % page_size) * width;
        double dot = 0;
        for (int64_t c = 0; c < rank; c++)
          dot += (q_bf16 ? ref_bf16_to_f32(((uint16_t *)ql)[r * ldq + c]) : ((float *)ql)[r * ldq + c]) * row[c];
        for (int64_t c = 0; c < rope; c++)
          dot += (q_bf16 ? ref_bf16_to_f32(((uint16_t *)qr)[r * ldr + c]) : ((float *)qr)[r * ldr + c]) * row[rank + c];
        s[j] = dot * softmax_scale;
        mx = fmax(mx, s[j]);
      }
      for (int64_t j = 0; j < lens[t]; j++) s[j] = exp(s[j] - mx), sum += s[j];
      for (int64_t c = 0; c < rank; c++) {
        double e = 0;
        for (int64_t j = 0; j < lens[t]; j++)
          e += s[j] / sum * pv[(table[t * ldb + j / page_size] * page_size + j % page_size) * width + c];
        double err = fabs(o1[r * ldo + c] - e) / (tol * vmax);
        if (!(err <= worst)) worst = err;
      }
    }
  size_t bytes = sizeof(float) * (size_t)((nq * heads + 1) * ldo);
  char lens_text[96];
  int at = 0;
  for (int64_t t = 0; t < nq && at < 80; t++) at += snprintf(lens_text + at, sizeof lens_text - (size_t)at, "%s%d", t ? "," : "", lens[t]);
  report(rc1 == MK_OK && rc3 == MK_OK && worst <= 1 && gaps_intact_f32(o1, nq * heads, rank, ldo) && same_bits(o1, o3, bytes),
         "mk_mla_decode %s q %s pages %s nq=%lld heads=%lld rank=%lld rope=%lld page=%lld lens %s scale %g: rc %d/%d, max err %.3g of %g*max|c_kv|, 3 threads %s",
         name, q_bf16 ? "BF16" : "F32", pages_dtype == MK_BF16 ? "BF16" : "F32", (long long)nq, (long long)heads, (long long)rank,
         (long long)rope, (long long)page_size, lens_text, softmax_scale, rc1, rc3, worst, tol,
         same_bits(o1, o3, bytes) ? "bit-identical" : "DIFFER");
  free(pages), free(pv), free(perm), free(table), free(ql), free(qr), free(o1), free(o3), free(s);
}

void check_mla_errors(void) {
  int64_t rank = 4, rope = 2, width = 6, page_size = 4, num_pages = 2, ldo = rank;
  float pages[2 * 4 * 6] = {0}, ql[4] = {1, 2, 3, 4}, qr[2] = {1, 1}, out[4] = {9, 9, 9, 9};
  (void)width;
  int32_t table[2] = {0, 1}, lens[1] = {9}; /* 9 > 2 pages of 4 */
  int rc = mk_mla_decode(g_c1, out, ldo, ql, rank, qr, rope, MK_F32, 1, 1, rank, rope, pages, MK_F32, num_pages, page_size,
                         table, 2, 2, lens, 1.0f);
  report(rc == MK_E_INDEX && out[0] == 9, "mk_mla_decode context_len past max_pages*page_size: rc %d (expected MK_E_INDEX), out untouched %s",
         rc, out[0] == 9 ? "yes" : "NO");
  lens[0] = 5, table[1] = 2; /* page 2 of 2 */
  rc = mk_mla_decode(g_c1, out, ldo, ql, rank, qr, rope, MK_F32, 1, 1, rank, rope, pages, MK_F32, num_pages, page_size, table,
                     2, 2, lens, 1.0f);
  report(rc == MK_E_INDEX && out[0] == 9, "mk_mla_decode block_table entry = num_pages: rc %d (expected MK_E_INDEX)", rc);
  table[1] = 1;
  rc = mk_mla_decode(g_c1, out, ldo, ql, rank, qr, rope, MK_BF16, 1, 1, rank, rope, pages, MK_F32, num_pages, page_size, table,
                     2, 2, lens, 1.0f);
  report(rc == MK_E_DTYPE && out[0] == 9, "mk_mla_decode BF16 q over F32 pages: rc %d (expected MK_E_DTYPE)", rc);
}

/* ------------------------------------------------------------------------------------------------ contract misc */

void check_errors(void) {
  float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 1, 1}, out[4] = {7, 7, 7, 7};
  int rc = mk_matmul(g_c1, out, 2, x, MK_BF16, 2, w, MK_F32, 2, 2, 2, 2);
  report(rc == MK_E_DTYPE && out[0] == 7, "mk_matmul BF16 x with F32 w: rc %d (expected MK_E_DTYPE %d), out untouched %s", rc,
         MK_E_DTYPE, out[0] == 7 ? "yes" : "NO");
  rc = mk_matmul(g_c1, NULL, 2, x, MK_F32, 2, w, MK_F32, 2, 2, 2, 2);
  report(rc == MK_E_NULL, "mk_matmul null out: rc %d (expected MK_E_NULL %d)", rc, MK_E_NULL);
  rc = mk_matmul(g_c1, out, 1, x, MK_F32, 2, w, MK_F32, 2, 2, 2, 2);
  report(rc == MK_E_SHAPE && out[0] == 7, "mk_matmul ldo < m: rc %d (expected MK_E_SHAPE %d)", rc, MK_E_SHAPE);
  int8_t xq[4] = {1, 2, 3, 4}, wq[4] = {1, 1, 1, 1};
  const int8_t *wg[2] = {wq, NULL};
  float s[2] = {1, 1}, wsv[2] = {1, 1};
  const float *wsg[2] = {wsv, NULL};
  int32_t offsets[3] = {0, 2, 1}; /* decreasing */
  rc = mk_matmul_i8_grouped(g_c1, out, 2, xq, 2, s, offsets, 2, wg, 2, wsg, 2, 2);
  report(rc == MK_E_INDEX && out[0] == 7, "mk_matmul_i8_grouped decreasing row_offsets: rc %d (expected MK_E_INDEX %d)", rc, MK_E_INDEX);
  int32_t offsets2[3] = {0, 1, 2}; /* group 1 has a row but null weights */
  rc = mk_matmul_i8_grouped(g_c1, out, 2, xq, 2, s, offsets2, 2, wg, 2, wsg, 2, 2);
  report(rc == MK_E_NULL && out[0] == 7, "mk_matmul_i8_grouped null weights for a group with rows: rc %d (expected MK_E_NULL)", rc);
  int32_t ids[2];
  float wts[2];
  rc = mk_moe_gate(g_c1, ids, wts, x, 4, NULL, 1, 4, 3, 2, 1, 1, 1.0f); /* topk 3 > 2 experts of 1 kept group */
  report(rc == MK_E_SHAPE, "mk_moe_gate topk > experts in the kept groups: rc %d (expected MK_E_SHAPE)", rc);
  rc = mk_convert(g_c1, out, MK_F32, 2, x, MK_F32, 2, 2, 2);
  report(rc == MK_E_DTYPE && out[0] == 7, "mk_convert F32 -> F32: rc %d (expected MK_E_DTYPE)", rc);
  mk_context *bad = mk_context_create(0, MK_ISA_PORTABLE);
  report(bad == NULL, "mk_context_create(0 threads) is null: %s", bad == NULL ? "yes" : "NO");
  mk_context_destroy(bad);
  report(mk_cpu_supports(MK_ISA_PORTABLE) == 1 && mk_cpu_supports(99) == 0,
         "mk_cpu_supports: portable %d (expected 1), unknown code %d (expected 0)", mk_cpu_supports(MK_ISA_PORTABLE),
         mk_cpu_supports(99));
}
