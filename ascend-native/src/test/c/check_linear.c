/* Contract checks of the linear ops: matmul (F32, BF16), per-head forms, INT8 quantization and A8W8. */
#include "contract_check.h"

/* ------------------------------------------------------------------------------------------------ matmul */

/* out[t][o] = Σ_j x[t][j]·w[o][j]; |error| <= 1e-5 · Σ_j |x[t][j]·w[o][j]| (KernelsContract's tolerance). */
void check_matmul(int x_dtype, int w_dtype, int64_t n, int64_t m, int64_t k) {
  int64_t ldx = k + 3, ldw = k + 1, ldo = m + 2;
  size_t xs = x_dtype == MK_BF16 ? 2 : 4, ws = w_dtype == MK_BF16 ? 2 : 4;
  void *x = xmalloc(xs * (size_t)(n * ldx + 1)), *w = xmalloc(ws * (size_t)(m * ldw + 1));
  seed((uint64_t)(n * 1000003 + m * 1009 + k) ^ (uint64_t)(x_dtype * 7 + w_dtype));
  double *xv = xmalloc(sizeof(double) * (size_t)(n * k)), *wv = xmalloc(sizeof(double) * (size_t)(m * k));
  for (int64_t t = 0; t < n; t++)
    for (int64_t j = 0; j < k; j++) {
      if (x_dtype == MK_BF16) {
        uint16_t h = rand_bf16(-2, 2);
        ((uint16_t *)x)[t * ldx + j] = h;
        xv[t * k + j] = ref_bf16_to_f32(h);
      } else {
        float f = (float)uniform(-2, 2);
        ((float *)x)[t * ldx + j] = f;
        xv[t * k + j] = f;
      }
    }
  for (int64_t o = 0; o < m; o++)
    for (int64_t j = 0; j < k; j++) {
      if (w_dtype == MK_BF16) {
        uint16_t h = rand_bf16(-1, 1);
        ((uint16_t *)w)[o * ldw + j] = h;
        wv[o * k + j] = ref_bf16_to_f32(h);
      } else {
        float f = (float)uniform(-1, 1);
        ((float *)w)[o * ldw + j] = f;
        wv[o * k + j] = f;
      }
    }
  float *o1 = out_f32(n, ldo), *o3 = out_f32(n, ldo);
  int rc1 = mk_matmul(g_c1, o1, ldo, x, x_dtype, ldx, w, w_dtype, ldw, n, m, k);
  int rc3 = mk_matmul(g_c3, o3, ldo, x, x_dtype, ldx, w, w_dtype, ldw, n, m, k);
  double worst = 0; /* largest |error| / tolerance */
  for (int64_t t = 0; t < n && rc1 == MK_OK; t++)
    for (int64_t o = 0; o < m; o++) {
      double sum = 0, mag = 0;
      for (int64_t j = 0; j < k; j++) {
        double p = xv[t * k + j] * wv[o * k + j];
        sum += p, mag += fabs(p);
      }
      double err = fabs((double)o1[t * ldo + o] - sum), tol = 1e-5 * mag;
      double ratio = tol > 0 ? err / tol : (err == 0 ? 0 : INFINITY);
      if (!(ratio <= worst)) worst = ratio; /* NaN counts as worst */
    }
  int ok = rc1 == MK_OK && rc3 == MK_OK && worst <= 1 && gaps_intact_f32(o1, n, m, ldo) &&
           same_bits(o1, o3, sizeof(float) * (size_t)((n + 1) * ldo));
  report(ok, "mk_matmul %s x %s n=%lld m=%lld k=%lld: rc %d/%d, max err %.3g of 1e-5*sum|x*w|, 3 threads %s",
         x_dtype == MK_BF16 ? "BF16" : "F32", w_dtype == MK_BF16 ? "BF16" : "F32", (long long)n, (long long)m,
         (long long)k, rc1, rc3, worst, same_bits(o1, o3, sizeof(float) * (size_t)((n + 1) * ldo)) ? "bit-identical" : "DIFFER");
  free(x), free(w), free(xv), free(wv), free(o1), free(o3);
}

/* mk_matmul_heads: each head's rows bit for bit what mk_matmul gives them. */
void check_matmul_heads(int x_dtype, int w_dtype, int64_t n, int64_t heads, int64_t m, int64_t k) {
  size_t xs = x_dtype == MK_BF16 ? 2 : 4, ws = w_dtype == MK_BF16 ? 2 : 4;
  int64_t ldx = k + 1, ldo = m + 1, rows = n * heads;
  char *x = xmalloc(xs * (size_t)(rows * ldx)), *w = xmalloc(ws * (size_t)(heads * m * k));
  seed((uint64_t)(n * 31 + heads * 7 + m * 3 + k));
  for (int64_t i = 0; i < rows * ldx; i++)
    if (x_dtype == MK_BF16) ((uint16_t *)x)[i] = rand_bf16(-1, 1);
    else ((float *)x)[i] = (float)uniform(-1, 1);
  for (int64_t i = 0; i < heads * m * k; i++)
    if (w_dtype == MK_BF16) ((uint16_t *)w)[i] = rand_bf16(-1, 1);
    else ((float *)w)[i] = (float)uniform(-1, 1);
  float *o1 = out_f32(rows, ldo), *o3 = out_f32(rows, ldo), *e = out_f32(rows, ldo);
  int rc1 = mk_matmul_heads(g_c1, o1, ldo, x, x_dtype, ldx, w, w_dtype, n, heads, m, k);
  int rc3 = mk_matmul_heads(g_c3, o3, ldo, x, x_dtype, ldx, w, w_dtype, n, heads, m, k);
  int rc = MK_OK;
  for (int64_t h = 0; h < heads && rc == MK_OK; h++) /* head h: rows h, h + heads, ... */
    rc = mk_matmul(g_c1, e + h * ldo, heads * ldo, x + (size_t)(h * ldx) * xs, x_dtype, heads * ldx,
                   w + (size_t)(h * m * k) * ws, w_dtype, k, n, m, k);
  size_t bytes = sizeof(float) * (size_t)((rows + 1) * ldo);
  int ok = rc1 == MK_OK && rc3 == MK_OK && rc == MK_OK && same_bits(o1, e, bytes) && same_bits(o1, o3, bytes);
  report(ok, "mk_matmul_heads %s x %s n=%lld heads=%lld m=%lld k=%lld: bit-identical to mk_matmul per head %s, 3 threads %s",
         x_dtype == MK_BF16 ? "BF16" : "F32", w_dtype == MK_BF16 ? "BF16" : "F32", (long long)n, (long long)heads,
         (long long)m, (long long)k, same_bits(o1, e, bytes) ? "yes" : "NO", same_bits(o1, o3, bytes) ? "bit-identical" : "DIFFER");
  free(x), free(w), free(o1), free(o3), free(e);
}

/* mk_matmul_heads_km, F32 x: out[(t,h)][o] = Σ_c x[(t,h)][c]·w[h][c][o], products added in column order with one
 * rounding per multiply and per add: exact bits. BF16 x: within 1e-5 · Σ|x·w|; mk_matmul_heads_km_pairs on pairs
 * made as the header lays them out: bit for bit mk_matmul_heads_km. */
void check_matmul_heads_km(int x_dtype, int64_t n, int64_t heads, int64_t m, int64_t k) {
  int w_dtype = x_dtype; /* F32 x with F32 w; BF16 x with BF16 w */
  size_t es = x_dtype == MK_BF16 ? 2 : 4;
  int64_t ldx = k + 2, ldo = m + 3, rows = n * heads;
  char *x = xmalloc(es * (size_t)(rows * ldx)), *w = xmalloc(es * (size_t)(heads * k * m));
  seed((uint64_t)(n * 17 + heads * 5 + m * 3 + k) + 99);
  for (int64_t i = 0; i < rows * ldx; i++)
    if (x_dtype == MK_BF16) ((uint16_t *)x)[i] = rand_bf16(-1, 1);
    else ((float *)x)[i] = (float)uniform(-1, 1);
  for (int64_t i = 0; i < heads * k * m; i++)
    if (w_dtype == MK_BF16) ((uint16_t *)w)[i] = rand_bf16(-1, 1);
    else ((float *)w)[i] = (float)uniform(-1, 1);
  float *o1 = out_f32(rows, ldo), *o3 = out_f32(rows, ldo);
  int rc1 = mk_matmul_heads_km(g_c1, o1, ldo, x, x_dtype, ldx, w, w_dtype, n, heads, m, k);
  int rc3 = mk_matmul_heads_km(g_c3, o3, ldo, x, x_dtype, ldx, w, w_dtype, n, heads, m, k);
  double worst = 0;
  int exact = 1;
  for (int64_t t = 0; t < n; t++)
    for (int64_t h = 0; h < heads; h++)
      for (int64_t o = 0; o < m; o++) {
        int64_t r = t * heads + h;
        float f = 0;
        double sum = 0, mag = 0;
        for (int64_t c = 0; c < k; c++) {
          float xv = x_dtype == MK_BF16 ? ref_bf16_to_f32(((uint16_t *)x)[r * ldx + c]) : ((float *)x)[r * ldx + c];
          size_t at = (size_t)((h * k + c) * m + o);
          float wv = w_dtype == MK_BF16 ? ref_bf16_to_f32(((uint16_t *)w)[at]) : ((float *)w)[at];
          float p = xv * wv; /* -ffp-contract=off: rounded, then added */
          f = f + p;
          sum += (double)xv * wv, mag += fabs((double)xv * wv);
        }
        float got = o1[r * ldo + o];
        if (x_dtype == MK_F32 && fbits(got) != fbits(f)) exact = 0;
        double ratio = mag > 0 ? fabs(got - sum) / (1e-5 * mag) : fabs(got - sum) == 0 ? 0 : INFINITY;
        if (!(ratio <= worst)) worst = ratio;
      }
  size_t bytes = sizeof(float) * (size_t)((rows + 1) * ldo);
  int ok = rc1 == MK_OK && rc3 == MK_OK && exact && worst <= 1 && gaps_intact_f32(o1, rows, m, ldo) && same_bits(o1, o3, bytes);
  report(ok, "mk_matmul_heads_km %s n=%lld heads=%lld m=%lld k=%lld: rc %d/%d, %s, max err %.3g of 1e-5*sum|x*w|, 3 threads %s",
         x_dtype == MK_BF16 ? "BF16" : "F32", (long long)n, (long long)heads, (long long)m, (long long)k, rc1, rc3,
         x_dtype == MK_BF16 ? "tolerance only" : exact ? "column-order F32 bits exact" : "column-order F32 bits DIFFER",
         worst, same_bits(o1, o3, bytes) ? "bit-identical" : "DIFFER");
  if (x_dtype == MK_BF16) {
    int64_t blocks = (m + 31) / 32, pairs = (k + 1) / 2;
    size_t np = (size_t)(heads * blocks * pairs * 64);
    uint16_t *wp = xmalloc(2 * np), *wb = (uint16_t *)w;
    memset(wp, 0, 2 * np);
    for (int64_t h = 0; h < heads; h++)
      for (int64_t b = 0; b < blocks; b++)
        for (int64_t j = 0; j < pairs; j++)
          for (int64_t o = 0; o < 32; o++)
            for (int64_t e = 0; e < 2; e++)
              if (2 * j + e < k && 32 * b + o < m)
                wp[((h * blocks + b) * pairs + j) * 64 + 2 * o + e] = wb[(h * k + 2 * j + e) * m + 32 * b + o];
    float *p1 = out_f32(rows, ldo), *p3 = out_f32(rows, ldo);
    int r1 = mk_matmul_heads_km_pairs(g_c1, p1, ldo, (uint16_t *)x, ldx, wp, n, heads, m, k);
    int r3 = mk_matmul_heads_km_pairs(g_c3, p3, ldo, (uint16_t *)x, ldx, wp, n, heads, m, k);
    int pok = r1 == MK_OK && r3 == MK_OK && same_bits(p1, o1, bytes) && same_bits(p1, p3, bytes);
    report(pok, "mk_matmul_heads_km_pairs BF16 n=%lld heads=%lld m=%lld k=%lld: rc %d/%d, bit-identical to mk_matmul_heads_km %s, 3 threads %s",
           (long long)n, (long long)heads, (long long)m, (long long)k, r1, r3, same_bits(p1, o1, bytes) ? "yes" : "NO",
           same_bits(p1, p3, bytes) ? "bit-identical" : "DIFFER");
    free(wp), free(p1), free(p3);
  }
  free(x), free(w), free(o1), free(o3);
}

/* ------------------------------------------------------------------------------------------------ INT8 */

/* Kernels.quantizeRows: amax = max|x|; amax 0: scale 0, q 0; else inv = 127 / amax (F32), q = clamp(rint(x·inv),
 * -127, 127) with x·inv an F32 product, rint ties to even; scale = amax / 127 (F32). */
void ref_quantize_row(int8_t *q, float *scale, const float *x, int64_t k) {
  float amax = 0;
  for (int64_t j = 0; j < k; j++) amax = fmaxf(amax, fabsf(x[j]));
  *scale = amax / 127.0f;
  if (amax == 0) {
    memset(q, 0, (size_t)k);
    *scale = 0;
    return;
  }
  float inv = 127.0f / amax;
  for (int64_t j = 0; j < k; j++) {
    double r = nearbyint((double)(float)(x[j] * inv)); /* default rounding mode: ties to even */
    q[j] = (int8_t)(r > 127 ? 127 : r < -127 ? -127 : r);
  }
}

void fill_row_kind(float *x, int64_t k, int kind) {
  for (int64_t j = 0; j < k; j++) x[j] = (float)uniform(-3, 3);
  if (kind == 1) memset(x, 0, sizeof(float) * (size_t)k); /* all zero (incl. -0 below) */
  if (kind == 1 && k > 1) x[k - 1] = -0.0f;
  if (kind == 2) x[k / 2] = 1000.0f; /* one outlier: most q near 0 */
  if (kind == 3) /* exact halves: x·inv lands on .5 ties (amax 127 -> inv 1) */
    for (int64_t j = 0; j < k; j++) x[j] = j == 0 ? 127.0f : (float)((j % 9) - 4) + 0.5f;
}

void check_quantize_rows(int x_dtype, int64_t n, int64_t k) {
  int64_t ldx = k + 1, ldq = k + 5;
  size_t es = x_dtype == MK_BF16 ? 2 : 4;
  char *x = xmalloc(es * (size_t)(n * ldx));
  float *xf = xmalloc(sizeof(float) * (size_t)(n * k)), *row = xmalloc(sizeof(float) * (size_t)(k + 1));
  seed((uint64_t)(n * 13 + k) + (uint64_t)x_dtype * 1000);
  for (int64_t t = 0; t < n; t++) {
    fill_row_kind(row, k, (int)(t % 4));
    for (int64_t j = 0; j < k; j++) {
      if (x_dtype == MK_BF16) {
        uint16_t h = ref_f32_to_bf16(row[j]);
        ((uint16_t *)x)[t * ldx + j] = h;
        xf[t * k + j] = ref_bf16_to_f32(h);
      } else {
        ((float *)x)[t * ldx + j] = row[j];
        xf[t * k + j] = row[j];
      }
    }
  }
  int8_t *q1 = xmalloc((size_t)(n * ldq + 1)), *q3 = xmalloc((size_t)(n * ldq + 1)), *qe = xmalloc((size_t)k + 1);
  memset(q1, 0x55, (size_t)(n * ldq + 1)), memset(q3, 0x55, (size_t)(n * ldq + 1));
  float *s1 = xmalloc(sizeof(float) * (size_t)(n + 1)), *s3 = xmalloc(sizeof(float) * (size_t)(n + 1)), se;
  int rc1 = mk_quantize_rows(g_c1, q1, ldq, s1, x, x_dtype, ldx, n, k);
  int rc3 = mk_quantize_rows(g_c3, q3, ldq, s3, x, x_dtype, ldx, n, k);
  int64_t bad = 0, gaps = 1;
  for (int64_t t = 0; t < n && rc1 == MK_OK; t++) {
    ref_quantize_row(qe, &se, xf + t * k, k);
    if (memcmp(qe, q1 + t * ldq, (size_t)k) != 0 || fbits(se) != fbits(s1[t])) bad++;
    for (int64_t j = k; j < ldq; j++) gaps &= q1[t * ldq + j] == 0x55;
  }
  int same = same_bits(q1, q3, (size_t)(n * ldq)) && same_bits(s1, s3, sizeof(float) * (size_t)n);
  report(rc1 == MK_OK && rc3 == MK_OK && bad == 0 && gaps && same,
         "mk_quantize_rows %s n=%lld k=%lld: rc %d/%d, %lld of %lld rows differ from the reference (exact), 3 threads %s",
         x_dtype == MK_BF16 ? "BF16" : "F32", (long long)n, (long long)k, rc1, rc3, (long long)bad, (long long)n,
         same ? "bit-identical" : "DIFFER");
  free(x), free(xf), free(row), free(q1), free(q3), free(qe), free(s1), free(s3);
}

/* out[t][o] = (float)Σ_j xq[t][j]·w[o][j] · xs[t] · ws[o], exact INT32 sum, multiplied left to right in F32. */
float ref_i8_out(const int8_t *x, const int8_t *w, int64_t k, float xs, float ws) {
  int64_t dot = 0;
  for (int64_t j = 0; j < k; j++) dot += (int64_t)x[j] * w[j];
  float f = (float)dot;
  f = f * xs;
  return f * ws;
}

int8_t rand_i8(void) {
  int32_t r = rand_int(0, 15);
  return (int8_t)(r == 0 ? 127 : r == 1 ? -127 : rand_int(-127, 127)); /* extremes often */
}

void check_matmul_i8(int64_t n, int64_t m, int64_t k) {
  int64_t ldx = k + 3, ldw = k + 2, ldo = m + 1;
  int8_t *x = xmalloc((size_t)(n * ldx + 1)), *w = xmalloc((size_t)(m * ldw + 1));
  float *xs = xmalloc(sizeof(float) * (size_t)(n + 1)), *ws = xmalloc(sizeof(float) * (size_t)(m + 1));
  seed((uint64_t)(n * 7919 + m * 104729 + k));
  for (int64_t i = 0; i < n * ldx; i++) x[i] = rand_i8();
  for (int64_t i = 0; i < m * ldw; i++) w[i] = rand_i8();
  for (int64_t t = 0; t < n; t++) xs[t] = (float)uniform(1e-3, 0.1);
  for (int64_t o = 0; o < m; o++) ws[o] = (float)uniform(1e-3, 0.1);
  float *o1 = out_f32(n, ldo), *o3 = out_f32(n, ldo);
  int rc1 = mk_matmul_i8(g_c1, o1, ldo, x, ldx, xs, w, ldw, ws, n, m, k);
  int rc3 = mk_matmul_i8(g_c3, o3, ldo, x, ldx, xs, w, ldw, ws, n, m, k);
  int64_t bad = 0;
  for (int64_t t = 0; t < n; t++)
    for (int64_t o = 0; o < m; o++)
      if (fbits(o1[t * ldo + o]) != fbits(ref_i8_out(x + t * ldx, w + o * ldw, k, xs[t], ws[o]))) bad++;
  size_t bytes = sizeof(float) * (size_t)((n + 1) * ldo);
  report(rc1 == MK_OK && rc3 == MK_OK && bad == 0 && gaps_intact_f32(o1, n, m, ldo) && same_bits(o1, o3, bytes),
         "mk_matmul_i8 n=%lld m=%lld k=%lld: rc %d/%d, %lld of %lld outputs differ (exact), 3 threads %s", (long long)n,
         (long long)m, (long long)k, rc1, rc3, (long long)bad, (long long)(n * m), same_bits(o1, o3, bytes) ? "bit-identical" : "DIFFER");
  free(x), free(w), free(xs), free(ws), free(o1), free(o3);
}

/* Groups of rows (some empty, with null weights) against their own weights: exact, and bit for bit mk_matmul_i8 on each
 * group alone. */
void check_matmul_i8_grouped(const int32_t *sizes, int64_t groups, int64_t m, int64_t k) {
  int32_t *offsets = xmalloc(sizeof(int32_t) * (size_t)(groups + 1));
  offsets[0] = 0;
  for (int64_t g = 0; g < groups; g++) offsets[g + 1] = offsets[g] + sizes[g];
  int64_t n = offsets[groups], ldx = k + 1, ldw = k + 4, ldo = m + 2;
  int8_t *x = xmalloc((size_t)(n * ldx + 1));
  float *xs = xmalloc(sizeof(float) * (size_t)(n + 1));
  const int8_t **w = xmalloc(sizeof(int8_t *) * (size_t)groups);
  const float **ws = xmalloc(sizeof(float *) * (size_t)groups);
  seed((uint64_t)(n * 3 + groups * 11 + m * 5 + k));
  for (int64_t i = 0; i < n * ldx; i++) x[i] = rand_i8();
  for (int64_t t = 0; t < n; t++) xs[t] = (float)uniform(1e-3, 0.1);
  for (int64_t g = 0; g < groups; g++) {
    if (sizes[g] == 0) { /* a group without rows: its weights may be null */
      w[g] = NULL, ws[g] = NULL;
      continue;
    }
    int8_t *wg = xmalloc((size_t)(m * ldw + 1));
    float *sg = xmalloc(sizeof(float) * (size_t)(m + 1));
    for (int64_t i = 0; i < m * ldw; i++) wg[i] = rand_i8();
    for (int64_t o = 0; o < m; o++) sg[o] = (float)uniform(1e-3, 0.1);
    w[g] = wg, ws[g] = sg;
  }
  float *o1 = out_f32(n, ldo), *o3 = out_f32(n, ldo), *e = out_f32(n, ldo);
  int rc1 = mk_matmul_i8_grouped(g_c1, o1, ldo, x, ldx, xs, offsets, groups, w, ldw, ws, m, k);
  int rc3 = mk_matmul_i8_grouped(g_c3, o3, ldo, x, ldx, xs, offsets, groups, w, ldw, ws, m, k);
  int rc = MK_OK;
  int64_t bad = 0;
  for (int64_t g = 0; g < groups; g++) {
    if (sizes[g] == 0) continue;
    int64_t t0 = offsets[g];
    int r = mk_matmul_i8(g_c1, e + t0 * ldo, ldo, x + t0 * ldx, ldx, xs + t0, w[g], ldw, ws[g], sizes[g], m, k);
    if (r != MK_OK) rc = r;
    for (int64_t t = t0; t < offsets[g + 1]; t++)
      for (int64_t o = 0; o < m; o++)
        if (fbits(o1[t * ldo + o]) != fbits(ref_i8_out(x + t * ldx, w[g] + o * ldw, k, xs[t], ws[g][o]))) bad++;
  }
  size_t bytes = sizeof(float) * (size_t)((n + 1) * ldo);
  char shape[128];
  int at = snprintf(shape, sizeof shape, "rows");
  for (int64_t g = 0; g < groups && at < 100; g++) at += snprintf(shape + at, sizeof shape - (size_t)at, "%s%d", g ? "," : " ", sizes[g]);
  report(rc1 == MK_OK && rc3 == MK_OK && rc == MK_OK && bad == 0 && same_bits(o1, e, bytes) && same_bits(o1, o3, bytes) &&
             gaps_intact_f32(o1, n, m, ldo),
         "mk_matmul_i8_grouped %s m=%lld k=%lld: rc %d/%d, %lld outputs differ from the reference (exact), per-group mk_matmul_i8 %s, 3 threads %s",
         shape, (long long)m, (long long)k, rc1, rc3, (long long)bad, same_bits(o1, e, bytes) ? "bit-identical" : "DIFFER",
         same_bits(o1, o3, bytes) ? "bit-identical" : "DIFFER");
  for (int64_t g = 0; g < groups; g++) free((void *)w[g]), free((void *)ws[g]);
  free(offsets), free(x), free(xs), free(w), free(ws), free(o1), free(o3), free(e);
}
