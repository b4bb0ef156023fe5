/* Contract checks of the row ops, conversions, the MoE gate and argmax. */
#include "contract_check.h"

/* ------------------------------------------------------------------------------------------------ row ops */

void check_rms_norm(int64_t n, int64_t d) {
  int64_t ldx = d + 1, ldo = d + 2;
  float *x = xmalloc(sizeof(float) * (size_t)(n * ldx)), *wt = xmalloc(sizeof(float) * (size_t)d);
  seed((uint64_t)(n * 101 + d));
  for (int64_t i = 0; i < n * ldx; i++) x[i] = (float)uniform(-4, 4);
  for (int64_t j = 0; j < d; j++) wt[j] = (float)uniform(0.5, 1.5);
  float eps = 1e-6f, *o1 = out_f32(n, ldo), *o3 = out_f32(n, ldo);
  int rc1 = mk_rms_norm(g_c1, o1, ldo, x, ldx, wt, eps, n, d), rc3 = mk_rms_norm(g_c3, o3, ldo, x, ldx, wt, eps, n, d);
  double worst = 0;
  for (int64_t t = 0; t < n; t++) {
    double ss = 0;
    for (int64_t j = 0; j < d; j++) ss += (double)x[t * ldx + j] * x[t * ldx + j];
    double r = 1.0 / sqrt(ss / (double)d + (double)eps);
    for (int64_t j = 0; j < d; j++) {
      double e = (double)x[t * ldx + j] * r * wt[j], err = fabs(o1[t * ldo + j] - e) / (1e-5 * fabs(e) + 1e-30);
      if (!(err <= worst)) worst = err;
    }
  }
  size_t bytes = sizeof(float) * (size_t)((n + 1) * ldo);
  report(rc1 == MK_OK && rc3 == MK_OK && worst <= 1 && gaps_intact_f32(o1, n, d, ldo) && same_bits(o1, o3, bytes),
         "mk_rms_norm n=%lld d=%lld: rc %d/%d, max err %.3g of 1e-5 relative, 3 threads %s", (long long)n, (long long)d, rc1,
         rc3, worst, same_bits(o1, o3, bytes) ? "bit-identical" : "DIFFER");
  free(x), free(wt), free(o1), free(o3);
}

/* gate values: random in [-8, 8] plus edges (0, -0, large of both signs). */
void fill_gate_up(float *g, float *u, int64_t count) {
  static const float edges[] = {0.0f, -0.0f, -100.0f, 100.0f, -88.0f, 88.0f, 1e-30f, -20.0f};
  for (int64_t i = 0; i < count; i++) {
    g[i] = (float)uniform(-8, 8);
    u[i] = (float)uniform(-2, 2);
    if (i % 13 == 5) g[i] = edges[(i / 13) % 8];
  }
}

void check_silu_mul(int64_t n, int64_t d) {
  int64_t ld = d + 3, ldo = d + 1;
  float *g = xmalloc(sizeof(float) * (size_t)(n * ld + 1)), *u = xmalloc(sizeof(float) * (size_t)(n * ld + 1));
  seed((uint64_t)(n * 37 + d));
  fill_gate_up(g, u, n * ld);
  float *o1 = out_f32(n, ldo), *o3 = out_f32(n, ldo);
  int rc1 = mk_silu_mul(g_c1, o1, ldo, g, ld, u, ld, n, d), rc3 = mk_silu_mul(g_c3, o3, ldo, g, ld, u, ld, n, d);
  double worst = 0;
  for (int64_t t = 0; t < n; t++)
    for (int64_t j = 0; j < d; j++) {
      double gv = g[t * ld + j], e = gv / (1.0 + exp(-gv)) * u[t * ld + j];
      double err = fabs(o1[t * ldo + j] - e) / (1e-6 * fabs(e) + 1e-37);
      if (!(err <= worst)) worst = err;
    }
  size_t bytes = sizeof(float) * (size_t)((n + 1) * ldo);
  report(rc1 == MK_OK && rc3 == MK_OK && worst <= 1 && gaps_intact_f32(o1, n, d, ldo) && same_bits(o1, o3, bytes),
         "mk_silu_mul n=%lld d=%lld: rc %d/%d, max err %.3g of 1e-6 relative, 3 threads %s", (long long)n, (long long)d, rc1,
         rc3, worst, same_bits(o1, o3, bytes) ? "bit-identical" : "DIFFER");
  /* mk_silu_mul_quantize = mk_quantize_rows(mk_silu_mul(gate, up)), bit for bit */
  int64_t ldq = d + 2;
  int8_t *q1 = xmalloc((size_t)(n * ldq + 1)), *q3 = xmalloc((size_t)(n * ldq + 1)), *qe = xmalloc((size_t)(n * ldq + 1));
  float *s1 = xmalloc(sizeof(float) * (size_t)(n + 1)), *s3 = xmalloc(sizeof(float) * (size_t)(n + 1)),
        *se = xmalloc(sizeof(float) * (size_t)(n + 1)), *qe2 = xmalloc(sizeof(float) * (size_t)(n + 1));
  memset(q1, 0x55, (size_t)(n * ldq + 1)), memset(q3, 0x55, (size_t)(n * ldq + 1)), memset(qe, 0x55, (size_t)(n * ldq + 1));
  int r1 = mk_silu_mul_quantize(g_c1, q1, ldq, s1, g, ld, u, ld, n, d);
  int r3 = mk_silu_mul_quantize(g_c3, q3, ldq, s3, g, ld, u, ld, n, d);
  int re = mk_quantize_rows(g_c1, qe, ldq, se, o1, MK_F32, ldo, n, d);
  int64_t bad = 0;
  for (int64_t t = 0; t < n; t++) {
    int8_t *row = xmalloc((size_t)d + 1);
    ref_quantize_row(row, &qe2[t], o1 + t * ldo, d); /* and the reference quantization of the library's product */
    if (memcmp(row, qe + t * ldq, (size_t)d) != 0 || fbits(qe2[t]) != fbits(se[t])) bad++;
    free(row);
  }
  int same_q = same_bits(q1, qe, (size_t)(n * ldq)) && same_bits(s1, se, sizeof(float) * (size_t)n);
  int same_t = same_bits(q1, q3, (size_t)(n * ldq)) && same_bits(s1, s3, sizeof(float) * (size_t)n);
  report(r1 == MK_OK && r3 == MK_OK && re == MK_OK && same_q && bad == 0 && same_t,
         "mk_silu_mul_quantize n=%lld d=%lld: rc %d/%d, quantize_rows(silu_mul) %s (that quantization vs reference: %lld rows differ), 3 threads %s",
         (long long)n, (long long)d, r1, r3, same_q ? "bit-identical" : "DIFFERS", (long long)bad, same_t ? "bit-identical" : "DIFFER");
  free(g), free(u), free(o1), free(o3), free(q1), free(q3), free(qe), free(s1), free(s3), free(se), free(qe2);
}

void check_convert(void) {
  /* F32 -> BF16: specials (NaNs with payloads, infinities, zeros, subnormals, ties), then random bit patterns */
  static const uint32_t specials[] = {
      0x7FA12345u, /* signaling NaN: quiet, payload's upper bits kept -> 0x7FE1 */
      0xFF812345u, /* negative signaling NaN -> 0xFFC1 */
      0x7FC00001u, /* quiet NaN whose payload is only in the low half -> 0x7FC0 */
      0x7F800001u, /* NaN with only the lowest payload bit: must stay NaN -> 0x7FC0 */
      0x7F800000u, 0xFF800000u, 0x00000000u, 0x80000000u,
      0x00000001u, /* smallest subnormal -> 0 */
      0x00008000u, /* subnormal tie, even below -> 0x0000 */
      0x00018000u, /* subnormal tie, odd below -> 0x0002 */
      0x00008001u, /* just above the tie -> 0x0001 */
      0x007FFFFFu, /* largest subnormal -> 0x0080 (the smallest normal) */
      0x80012345u, /* negative subnormal -> 0x8001 */
      0x3F808000u, /* 1 + 2^-8: tie, even below -> 0x3F80 */
      0x3F818000u, /* tie, odd below -> 0x3F82 */
      0x3F807FFFu, /* below the tie -> 0x3F80 */
      0x3F808001u, /* above the tie -> 0x3F81 */
      0xBF818000u, /* negative tie -> 0xBF82 */
      0x7F7F7FFFu, /* just below the tie at the top -> 0x7F7F */
      0x7F7F8000u, /* tie at the largest finite BF16, odd -> 0x7F80 (+inf) */
      0x7F7FFFFFu, /* F32 max -> +inf */
      0xFF7FFFFFu, /* -F32 max -> -inf */
  };
  size_t ns = sizeof specials / sizeof specials[0], random_count = 200003, count = ns + random_count;
  float *in = xmalloc(sizeof(float) * count);
  seed(4242);
  for (size_t i = 0; i < count; i++) in[i] = bitsf(i < ns ? specials[i] : (uint32_t)next_u64());
  /* as 7 rows of (count / 7) with padded strides, 1 and 3 threads */
  int64_t n = 7, d = (int64_t)(count / 7), ldi = d, ldo = d + 3;
  uint16_t *o1 = xmalloc(2 * (size_t)(n * ldo)), *o3 = xmalloc(2 * (size_t)(n * ldo));
  memset(o1, 0xA5, 2 * (size_t)(n * ldo)), memset(o3, 0xA5, 2 * (size_t)(n * ldo));
  int rc1 = mk_convert(g_c1, o1, MK_BF16, ldo, in, MK_F32, ldi, n, d);
  int rc3 = mk_convert(g_c3, o3, MK_BF16, ldo, in, MK_F32, ldi, n, d);
  int64_t bad = 0, gaps = 1;
  char first[160] = "";
  for (int64_t t = 0; t < n; t++) {
    for (int64_t j = 0; j < d; j++) {
      uint16_t e = ref_f32_to_bf16(in[t * ldi + j]), got = o1[t * ldo + j];
      if (e != got && bad++ == 0)
        snprintf(first, sizeof first, "; first: 0x%08X -> 0x%04X, expected 0x%04X", fbits(in[t * ldi + j]), got, e);
    }
    for (int64_t j = d; j < ldo; j++) gaps &= o1[t * ldo + j] == 0xA5A5;
  }
  int same = same_bits(o1, o3, 2 * (size_t)(n * ldo));
  report(rc1 == MK_OK && rc3 == MK_OK && bad == 0 && gaps && same,
         "mk_convert F32->BF16 %lld values (NaN payloads, subnormals, ties, overflow): rc %d/%d, %lld differ%s, 3 threads %s",
         (long long)(n * d), rc1, rc3, (long long)bad, first, same ? "bit-identical" : "DIFFER");
  free(in), free(o1), free(o3);

  /* BF16 -> F32: all 65536 patterns, exact (the upper half of the F32, NaNs as they are) */
  int64_t bn = 64, bd = 1024, bldo = bd + 1;
  uint16_t *b = xmalloc(2 * 65536);
  for (uint32_t i = 0; i < 65536; i++) b[i] = (uint16_t)i;
  float *f1 = out_f32(bn, bldo), *f3 = out_f32(bn, bldo);
  rc1 = mk_convert(g_c1, f1, MK_F32, bldo, b, MK_BF16, bd, bn, bd);
  rc3 = mk_convert(g_c3, f3, MK_F32, bldo, b, MK_BF16, bd, bn, bd);
  bad = 0;
  for (int64_t t = 0; t < bn; t++)
    for (int64_t j = 0; j < bd; j++)
      if (fbits(f1[t * bldo + j]) != (uint32_t)(t * bd + j) << 16) bad++;
  same = same_bits(f1, f3, sizeof(float) * (size_t)((bn + 1) * bldo));
  report(rc1 == MK_OK && rc3 == MK_OK && bad == 0 && gaps_intact_f32(f1, bn, bd, bldo) && same,
         "mk_convert BF16->F32 all 65536 patterns: rc %d/%d, %lld differ (exact), 3 threads %s", rc1, rc3, (long long)bad,
         same ? "bit-identical" : "DIFFER");
  free(b), free(f1), free(f3);
}

void check_rope(void) {
  int64_t positions_n = 7, heads = 3, rows = positions_n * heads, d = 64, ldx = d + 1, max_pos = 50, half = d / 2;
  float *x = xmalloc(sizeof(float) * (size_t)(rows * ldx)), *x3 = xmalloc(sizeof(float) * (size_t)(rows * ldx));
  float *cs = xmalloc(sizeof(float) * (size_t)(max_pos * half)), *sn = xmalloc(sizeof(float) * (size_t)(max_pos * half));
  int32_t pos[7] = {0, 1, 2, 49, 17, 17, 3};
  seed(77);
  for (int64_t i = 0; i < rows * ldx; i++) x[i] = (float)uniform(-2, 2);
  memcpy(x3, x, sizeof(float) * (size_t)(rows * ldx));
  for (int64_t p = 0; p < max_pos; p++)
    for (int64_t i = 0; i < half; i++) {
      double a = (double)p * pow(10000.0, -2.0 * (double)i / (double)d);
      cs[p * half + i] = (float)cos(a), sn[p * half + i] = (float)sin(a);
    }
  float *orig = xmalloc(sizeof(float) * (size_t)(rows * ldx));
  memcpy(orig, x, sizeof(float) * (size_t)(rows * ldx));
  int rc1 = mk_rope(g_c1, x, ldx, rows, heads, pos, cs, sn, max_pos, d);
  int rc3 = mk_rope(g_c3, x3, ldx, rows, heads, pos, cs, sn, max_pos, d);
  double worst = 0;
  int gaps = 1;
  for (int64_t r = 0; r < rows; r++) {
    int32_t p = pos[r / heads];
    for (int64_t i = 0; i < half; i++) {
      double x0 = orig[r * ldx + 2 * i], x1 = orig[r * ldx + 2 * i + 1], c = cs[p * half + i], s = sn[p * half + i];
      double e0 = x0 * c - x1 * s, e1 = x0 * s + x1 * c, scale = fabs(x0) + fabs(x1);
      double err = fmax(fabs(x[r * ldx + 2 * i] - e0), fabs(x[r * ldx + 2 * i + 1] - e1)) / (1e-6 * scale + 1e-30);
      if (!(err <= worst)) worst = err;
    }
    gaps &= fbits(x[r * ldx + d]) == fbits(orig[r * ldx + d]);
  }
  int same = same_bits(x, x3, sizeof(float) * (size_t)(rows * ldx));
  report(rc1 == MK_OK && rc3 == MK_OK && worst <= 1 && gaps && same,
         "mk_rope rows=%lld (3 heads a position) d=%lld: rc %d/%d, max err %.3g of 1e-6*(|x0|+|x1|), 3 threads %s",
         (long long)rows, (long long)d, rc1, rc3, worst, same ? "bit-identical" : "DIFFER");
  int32_t badpos[7] = {0, 1, 2, 50, 0, 0, 0};
  memcpy(x3, orig, sizeof(float) * (size_t)(rows * ldx));
  int rc = mk_rope(g_c1, x3, ldx, rows, heads, badpos, cs, sn, max_pos, d);
  report(rc == MK_E_INDEX && same_bits(x3, orig, sizeof(float) * (size_t)(rows * ldx)),
         "mk_rope position = max_pos: rc %d (expected MK_E_INDEX %d), x untouched %s", rc, MK_E_INDEX,
         same_bits(x3, orig, sizeof(float) * (size_t)(rows * ldx)) ? "yes" : "NO");
  free(x), free(x3), free(cs), free(sn), free(orig);
}

/* mk_add exact; mk_gather_quantize = quantize of the gathered rows; mk_scatter_add: out[rows[i]] += w[i]·y[i] in order,
 * each a rounded product then a rounded sum. */
void check_add_gather_scatter(void) {
  int64_t n = 7, d = 1021, ld = d + 1;
  float *a = xmalloc(sizeof(float) * (size_t)(n * ld)), *b = xmalloc(sizeof(float) * (size_t)(n * ld));
  seed(99);
  for (int64_t i = 0; i < n * ld; i++) a[i] = (float)uniform(-5, 5), b[i] = (float)uniform(-5, 5);
  float *o1 = out_f32(n, ld);
  int rc = mk_add(g_c1, o1, ld, a, ld, b, ld, n, d);
  int64_t bad = 0;
  for (int64_t t = 0; t < n; t++)
    for (int64_t j = 0; j < d; j++)
      if (fbits(o1[t * ld + j]) != fbits(a[t * ld + j] + b[t * ld + j])) bad++;
  report(rc == MK_OK && bad == 0 && gaps_intact_f32(o1, n, d, ld), "mk_add n=%lld d=%lld: rc %d, %lld differ (exact)",
         (long long)n, (long long)d, rc, (long long)bad);

  int32_t rows[9] = {6, 0, 3, 3, 1, 5, 2, 6, 4};
  int64_t r = 9, ldq = d + 3;
  int8_t *q = xmalloc((size_t)(r * ldq)), *qe = xmalloc((size_t)d);
  float *s = xmalloc(sizeof(float) * (size_t)r), se;
  rc = mk_gather_quantize(g_c1, q, ldq, s, a, ld, n, rows, r, d);
  bad = 0;
  for (int64_t i = 0; i < r; i++) {
    ref_quantize_row(qe, &se, a + rows[i] * ld, d);
    if (memcmp(qe, q + i * ldq, (size_t)d) != 0 || fbits(se) != fbits(s[i])) bad++;
  }
  report(rc == MK_OK && bad == 0, "mk_gather_quantize r=%lld of n=%lld d=%lld: rc %d, %lld rows differ (exact)", (long long)r,
         (long long)n, (long long)d, rc, (long long)bad);

  float *y = xmalloc(sizeof(float) * (size_t)(r * ld)), wts[9], *e = xmalloc(sizeof(float) * (size_t)(n * ld));
  for (int64_t i = 0; i < r * ld; i++) y[i] = (float)uniform(-1, 1);
  for (int64_t i = 0; i < r; i++) wts[i] = (float)uniform(0, 1);
  memcpy(o1, a, sizeof(float) * (size_t)(n * ld));
  memcpy(e, a, sizeof(float) * (size_t)(n * ld));
  rc = mk_scatter_add(g_c1, o1, ld, n, y, ld, rows, wts, r, d);
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < d; j++) {
      float p = wts[i] * y[i * ld + j];
      e[rows[i] * ld + j] = e[rows[i] * ld + j] + p;
    }
  bad = 0;
  for (int64_t i = 0; i < n * ld; i++) bad += fbits(o1[i]) != fbits(e[i]);
  report(rc == MK_OK && bad == 0, "mk_scatter_add r=%lld into n=%lld d=%lld (repeated rows): rc %d, %lld values differ (exact)",
         (long long)r, (long long)n, (long long)d, rc, (long long)bad);
  int32_t badrows[2] = {0, 7};
  memcpy(e, o1, sizeof(float) * (size_t)(n * ld));
  rc = mk_scatter_add(g_c1, o1, ld, n, y, ld, badrows, wts, 2, d);
  report(rc == MK_E_INDEX && same_bits(e, o1, sizeof(float) * (size_t)(n * ld)),
         "mk_scatter_add row = n: rc %d (expected MK_E_INDEX), out untouched %s", rc,
         same_bits(e, o1, sizeof(float) * (size_t)(n * ld)) ? "yes" : "NO");
  free(a), free(b), free(o1), free(q), free(qe), free(s), free(y), free(e);
}

/* FP8 e4m3 (no infinities; S.1111.111 is NaN): decoded here from its fields. */
float ref_fp8(uint8_t v) {
  int sign = v >> 7, e = (v >> 3) & 15, m = v & 7;
  if (e == 15 && m == 7) return sign ? -NAN : NAN;
  double mag = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
  return (float)(sign ? -mag : mag);
}

void check_dequant_fp8(int out_dtype) {
  int64_t m = 7, k = 300, block = 128, lds = 3 + 1, ldw = k + 1, ldo = k + 2;
  uint8_t *w = xmalloc((size_t)(m * ldw));
  float sc[8];
  seed(515);
  for (int64_t i = 0; i < m * ldw; i++) w[i] = (uint8_t)(i < 256 ? (uint64_t)i : next_u64()); /* every code, then random */
  for (int i = 0; i < 8; i++) sc[i] = (float)uniform(0.001, 4);
  size_t es = out_dtype == MK_BF16 ? 2 : 4;
  char *o = xmalloc(es * (size_t)(m * ldo));
  int rc = mk_dequant_fp8(g_c1, o, out_dtype, ldo, w, ldw, sc, lds, m, k, block);
  int64_t bad = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < k; j++) {
      float v = ref_fp8(w[i * ldw + j]) * sc[(i / block) * lds + j / block];
      int same;
      if (out_dtype == MK_BF16) {
        uint16_t got = ((uint16_t *)o)[i * ldo + j], e = ref_f32_to_bf16(v);
        same = isnan(v) ? isnan(ref_bf16_to_f32(got)) : got == e;
      } else {
        float got = ((float *)o)[i * ldo + j];
        same = isnan(v) ? isnan(got) : fbits(got) == fbits(v);
      }
      bad += !same;
    }
  report(rc == MK_OK && bad == 0, "mk_dequant_fp8 -> %s m=%lld k=%lld block=%lld (all 256 codes): rc %d, %lld differ (exact; NaN as NaN)",
         out_dtype == MK_BF16 ? "BF16" : "F32", (long long)m, (long long)k, (long long)block, rc, (long long)bad);
  free(w), free(o);
}

/* ------------------------------------------------------------------------------------------------ gate */

typedef struct {
  float key;
  int32_t id;
} ranked;

/* descending key, then ascending id */
int by_rank(const void *pa, const void *pb) {
  const ranked *a = pa, *b = pb;
  if (a->key != b->key) return a->key > b->key ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

/* DeepSeek-V3 noaux_tc, as Kernels.moeGate documents it: scores = σ(logits) (unbiased, for the weights), selection =
 * scores + bias; groups scored by the sum of their top-2 selection scores (without a bias: their best), the best
 * topk_group groups kept (ties: lower group); top-k of selection over the kept experts (ties: lower id); weights =
 * scores of the chosen, / their sum when norm, · routed_scaling_factor. */
void ref_gate(int32_t *ids, double *weights, const float *logits, const float *bias, int32_t e_count, int32_t topk,
                     int32_t n_group, int32_t topk_group, int norm, float factor) {
  float *score = xmalloc(sizeof(float) * (size_t)e_count);
  ranked *sel = xmalloc(sizeof(ranked) * (size_t)e_count), *grp = xmalloc(sizeof(ranked) * (size_t)n_group);
  int *kept = xmalloc(sizeof(int) * (size_t)e_count);
  int32_t per = e_count / n_group;
  for (int32_t e = 0; e < e_count; e++) {
    score[e] = (float)(1.0 / (1.0 + exp(-(double)logits[e])));
    sel[e].key = bias ? score[e] + bias[e] : score[e];
    sel[e].id = e;
    kept[e] = 1;
  }
  if (n_group > 1) {
    for (int32_t g = 0; g < n_group; g++) {
      ranked *members = xmalloc(sizeof(ranked) * (size_t)per);
      memcpy(members, sel + g * per, sizeof(ranked) * (size_t)per);
      qsort(members, (size_t)per, sizeof(ranked), by_rank);
      grp[g].key = bias ? members[0].key + members[1].key : members[0].key;
      grp[g].id = g;
      free(members);
    }
    qsort(grp, (size_t)n_group, sizeof(ranked), by_rank);
    for (int32_t e = 0; e < e_count; e++) kept[e] = 0;
    for (int32_t i = 0; i < topk_group; i++)
      for (int32_t e = 0; e < per; e++) kept[grp[i].id * per + e] = 1;
  }
  ranked *cand = xmalloc(sizeof(ranked) * (size_t)e_count);
  int32_t c = 0;
  for (int32_t e = 0; e < e_count; e++)
    if (kept[e]) cand[c++] = sel[e];
  qsort(cand, (size_t)c, sizeof(ranked), by_rank);
  double sum = 0;
  for (int32_t i = 0; i < topk; i++) ids[i] = cand[i].id, sum += score[cand[i].id];
  for (int32_t i = 0; i < topk; i++) weights[i] = (norm ? score[ids[i]] / sum : score[ids[i]]) * factor;
  free(score), free(sel), free(grp), free(kept), free(cand);
}

/* kind 0: random logits; 1: every logit equal (all ties); 2: pairs of equal logits and groups of equal scores */
void check_moe_gate(const char *name, int64_t n, int32_t e_count, int32_t topk, int32_t n_group, int32_t topk_group,
                           int use_bias, int norm, float factor, int kind) {
  int64_t ldl = e_count + 3;
  float *logits = xmalloc(sizeof(float) * (size_t)(n * ldl)), *bias = xmalloc(sizeof(float) * (size_t)e_count);
  seed((uint64_t)(n * 3 + e_count * 7 + topk * 11 + n_group * 13 + kind));
  for (int64_t i = 0; i < n * ldl; i++) logits[i] = (float)uniform(-4, 4);
  for (int32_t e = 0; e < e_count; e++) bias[e] = (float)uniform(-0.1, 0.1);
  if (kind == 1)
    for (int64_t i = 0; i < n * ldl; i++) logits[i] = 0.25f;
  if (kind == 1) for (int32_t e = 0; e < e_count; e++) bias[e] = 0;
  if (kind == 2) /* experts 2i and 2i+1 tie; group g of the second half mirrors group g of the first */
    for (int64_t t = 0; t < n; t++)
      for (int32_t e = 0; e < e_count; e++) {
        int32_t half = e_count / 2, src = e >= half ? e - half : e;
        logits[t * ldl + e] = (float)((src / 2 * 37 + t * 11) % 23) * 0.25f - 2.0f;
      }
  if (kind == 2) for (int32_t e = 0; e < e_count; e++) bias[e] = (float)((e % (e_count / 2)) / 2 % 5) * 0.125f;
  const float *b = use_bias ? bias : NULL;
  int32_t *i1 = xmalloc(sizeof(int32_t) * (size_t)(n * topk)), *i3 = xmalloc(sizeof(int32_t) * (size_t)(n * topk));
  float *w1 = xmalloc(sizeof(float) * (size_t)(n * topk)), *w3 = xmalloc(sizeof(float) * (size_t)(n * topk));
  int rc1 = mk_moe_gate(g_c1, i1, w1, logits, ldl, b, n, e_count, topk, n_group, topk_group, norm, factor);
  int rc3 = mk_moe_gate(g_c3, i3, w3, logits, ldl, b, n, e_count, topk, n_group, topk_group, norm, factor);
  int32_t *ie = xmalloc(sizeof(int32_t) * (size_t)topk);
  double *we = xmalloc(sizeof(double) * (size_t)topk), worst = 0;
  int64_t bad_ids = 0;
  char first[200] = "";
  for (int64_t t = 0; t < n && rc1 == MK_OK; t++) {
    ref_gate(ie, we, logits + t * ldl, b, e_count, topk, n_group, topk_group, norm, factor);
    for (int32_t i = 0; i < topk; i++) {
      if (ie[i] != i1[t * topk + i] && bad_ids++ == 0)
        snprintf(first, sizeof first, "; first: token %lld rank %d id %d, expected %d", (long long)t, i, i1[t * topk + i], ie[i]);
      double err = fabs(w1[t * topk + i] - we[i]) / (1e-6 * fabs(we[i]) + 1e-30);
      if (!(err <= worst)) worst = err;
    }
  }
  int same = same_bits(i1, i3, sizeof(int32_t) * (size_t)(n * topk)) && same_bits(w1, w3, sizeof(float) * (size_t)(n * topk));
  report(rc1 == MK_OK && rc3 == MK_OK && bad_ids == 0 && worst <= 1 && same,
         "mk_moe_gate %s n=%lld E=%d topk=%d groups=%d/%d bias=%s norm=%d: rc %d/%d, %lld ids differ%s, max weight err %.3g of 1e-6 relative, 3 threads %s",
         name, (long long)n, e_count, topk, topk_group, n_group, use_bias ? "yes" : "no", norm, rc1, rc3, (long long)bad_ids,
         first, worst, same ? "bit-identical" : "DIFFER");
  free(logits), free(bias), free(i1), free(i3), free(w1), free(w3), free(ie), free(we);
}

/* ------------------------------------------------------------------------------------------------ argmax */

int32_t ref_argmax(const float *x, int64_t d) {
  for (int64_t j = 0; j < d; j++)
    if (isnan(x[j]) || x[j] == INFINITY) return -1;
  int64_t best = -1;
  for (int64_t j = 0; j < d; j++)
    if (x[j] != -INFINITY && (best < 0 || x[j] > x[best])) best = j;
  return (int32_t)best;
}

void check_argmax(int64_t d) {
  int64_t n = d >= 1021 ? 67 : 12, ldx = d + 2; /* 67 rows of 1021: enough work for the 3 threads to split */
  float *x = xmalloc(sizeof(float) * (size_t)(n * ldx));
  seed((uint64_t)d * 5 + 1);
  for (int64_t i = 0; i < n * ldx; i++) x[i] = (float)uniform(-10, 10);
  for (int64_t t = 0; t < n; t++) {
    float *r = x + t * ldx;
    int64_t a = rand_int(0, (int32_t)(d - 1)), b = rand_int(0, (int32_t)(d - 1));
    switch (t) {
    case 1: r[a] = 50, r[b] = 50; break;                                        /* a tie: the lower index */
    case 2: r[a] = NAN; break;                                                  /* -1 */
    case 3: r[d - 1] = INFINITY; break;                                         /* -1 */
    case 4: for (int64_t j = 0; j < d; j++) r[j] = -INFINITY; break;            /* -1 */
    case 5: for (int64_t j = 0; j < d; j++) r[j] = -INFINITY; r[b] = -1e30f; break; /* the one finite */
    case 6: for (int64_t j = 0; j < d; j++) r[j] = j % 2 ? 0.0f : -0.0f; break; /* -0 == +0: index 0 */
    case 7: r[d - 1] = 1e30f; break;                                            /* the last */
    case 8: for (int64_t j = 0; j < d; j++) r[j] = -FLT_MAX; break;             /* all equal: 0 */
    case 9: r[a] = -NAN; r[b] = INFINITY; break;                                /* -1 */
    case 10: r[0] = 1e30f; r[d - 1] = NAN; break;                               /* -1 */
    default: break;
    }
    r[d] = 1e38f, r[d + 1] = NAN; /* past the row: must not count */
  }
  int32_t *i1 = xmalloc(sizeof(int32_t) * (size_t)(n + 1)), *i3 = xmalloc(sizeof(int32_t) * (size_t)(n + 1));
  i1[n] = i3[n] = 12345;
  int rc1 = mk_argmax_rows(g_c1, i1, x, ldx, n, d), rc3 = mk_argmax_rows(g_c3, i3, x, ldx, n, d);
  int64_t bad = 0;
  char first[120] = "";
  for (int64_t t = 0; t < n; t++) {
    int32_t e = ref_argmax(x + t * ldx, d);
    if (e != i1[t] && bad++ == 0) snprintf(first, sizeof first, "; first: row %lld got %d expected %d", (long long)t, i1[t], e);
  }
  int same = same_bits(i1, i3, sizeof(int32_t) * (size_t)(n + 1));
  report(rc1 == MK_OK && rc3 == MK_OK && bad == 0 && i1[n] == 12345 && same,
         "mk_argmax_rows n=%lld d=%lld (ties, NaN, +inf, all -inf, -0/+0): rc %d/%d, %lld rows differ%s, 3 threads %s",
         (long long)n, (long long)d, rc1, rc3, (long long)bad, first, same ? "bit-identical" : "DIFFER");
  free(x), free(i1), free(i3);
}
