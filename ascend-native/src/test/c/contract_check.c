/*
 * contract_check.c: checks libmoemesh_kernels' public ABI (include/mesh_kernels.h) on the portable path,
 * MK_ISA_PORTABLE, against plain scalar references written here from the documented semantics (the header and
 * io.moemesh.kernels.Kernels' javadoc), not from the library's code. It exists for CPUs where the Java contract
 * tests cannot run (aarch64, under qemu-user), and runs natively on x86-64 as well.
 *
 * Every case runs on a 1-thread and a 3-thread context: the 1-thread result is checked against the reference,
 * and the 3-thread result must be bit for bit the 1-thread one (the header's determinism rule). Outputs with a row
 * stride wider than the row get a sentinel in the gap, which must survive. Inputs are seeded and deterministic.
 *
 * Output: one line per check ("ok ..." or "FAIL ..."), then "N passed, M failed"; the exit status is 1 on any
 * failure. MK_CHECK_ISA=<n> in the environment runs the same checks on another path (e.g. 1 for AVX-512 on an
 * x86-64 that has it); the tolerances are the contract's, but a few exact checks are stated only for the portable
 * path and are skipped elsewhere (they say so).
 *
 * Build: see run-checks.sh next to this file (compile with -std=c11 -ffp-contract=off, link the library's objects).
 */
#include "mesh_kernels.h"

#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------------------------------------ harness */

static int g_passed, g_failed;
static mk_context *g_c1, *g_c3; /* 1 and 3 threads, same ISA */
static int g_isa = MK_ISA_PORTABLE;

static void report(int ok, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs(ok ? "ok   " : "FAIL ", stdout);
  vprintf(fmt, ap);
  fputc('\n', stdout);
  fflush(stdout);
  va_end(ap);
  if (ok) g_passed++;
  else g_failed++;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static void seed(uint64_t s) { g_rng = s * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull; }
static uint64_t next_u64(void) { /* splitmix64 */
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double uniform(double lo, double hi) { return lo + (hi - lo) * (double)(next_u64() >> 11) * 0x1p-53; }
static int32_t rand_int(int32_t lo, int32_t hi) { return lo + (int32_t)(next_u64() % (uint64_t)(hi - lo + 1)); }

static uint32_t fbits(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}
static float bitsf(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}

/* BF16 -> F32: the upper half of an F32. */
static float ref_bf16_to_f32(uint16_t h) { return bitsf((uint32_t)h << 16); }

/* |value| of BF16 magnitude bits m (sign clear) as a double, exponent 255 read as a finite 2^128 · (1 + f): the
 * rounding below may then step from the largest finite BF16 to 0x7F80, which is +inf. */
static double bf16_magnitude(uint32_t m) {
  uint32_t e = (m >> 7) & 0xFF, f = m & 0x7F;
  return e == 0 ? ldexp((double)f, -133) : ldexp((double)(128 + f), (int)e - 134);
}

/* F32 -> BF16, round to nearest even, by comparing the distances to the two neighbours in double (exact there). */
static uint16_t ref_f32_to_bf16(float f) {
  uint32_t b = fbits(f), sign = b & 0x80000000u;
  if (isnan(f)) return (uint16_t)((b >> 16) | 0x0040u); /* sign and upper payload, quiet */
  if (isinf(f)) return (uint16_t)(b >> 16);
  uint32_t lo = (b & 0x7FFFFFFFu) >> 16; /* toward zero */
  double v = fabs((double)f), below = v - bf16_magnitude(lo), above = bf16_magnitude(lo + 1) - v;
  uint32_t m = below < above ? lo : below > above ? lo + 1 : (lo & 1) ? lo + 1 : lo;
  return (uint16_t)((sign >> 16) | m);
}

static uint16_t rand_bf16(double lo, double hi) { return ref_f32_to_bf16((float)uniform(lo, hi)); }

static void *xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (p == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  return p;
}

#define SENTINEL 0x7FBADBADu /* a signaling-NaN pattern no op writes */

/* An F32 output of n rows of d at stride ld, the gaps (and one row's worth past the end) filled with SENTINEL. */
static float *out_f32(int64_t n, int64_t ld) {
  size_t count = (size_t)((n + 1) * ld);
  float *o = xmalloc(sizeof(float) * count);
  for (size_t i = 0; i < count; i++) o[i] = bitsf(SENTINEL);
  return o;
}

static int gaps_intact_f32(const float *o, int64_t n, int64_t d, int64_t ld) {
  for (int64_t i = 0; i < (n + 1) * ld; i++)
    if ((i % ld >= d || i >= n * ld) && fbits(o[i]) != SENTINEL) return 0;
  return 1;
}

static int same_bits(const void *a, const void *b, size_t bytes) { return memcmp(a, b, bytes) == 0; }

/* ------------------------------------------------------------------------------------------------ matmul */

/* out[t][o] = Σ_j x[t][j]·w[o][j]; |error| <= 1e-5 · Σ_j |x[t][j]·w[o][j]| (KernelsContract's tolerance). */
static void check_matmul(int x_dtype, int w_dtype, int64_t n, int64_t m, int64_t k) {
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
static void check_matmul_heads(int x_dtype, int w_dtype, int64_t n, int64_t heads, int64_t m, int64_t k) {
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
static void check_matmul_heads_km(int x_dtype, int64_t n, int64_t heads, int64_t m, int64_t k) {
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
static void ref_quantize_row(int8_t *q, float *scale, const float *x, int64_t k) {
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

static void fill_row_kind(float *x, int64_t k, int kind) {
  for (int64_t j = 0; j < k; j++) x[j] = (float)uniform(-3, 3);
  if (kind == 1) memset(x, 0, sizeof(float) * (size_t)k); /* all zero (incl. -0 below) */
  if (kind == 1 && k > 1) x[k - 1] = -0.0f;
  if (kind == 2) x[k / 2] = 1000.0f; /* one outlier: most q near 0 */
  if (kind == 3) /* exact halves: x·inv lands on .5 ties (amax 127 -> inv 1) */
    for (int64_t j = 0; j < k; j++) x[j] = j == 0 ? 127.0f : (float)((j % 9) - 4) + 0.5f;
}

static void check_quantize_rows(int x_dtype, int64_t n, int64_t k) {
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
static float ref_i8_out(const int8_t *x, const int8_t *w, int64_t k, float xs, float ws) {
  int64_t dot = 0;
  for (int64_t j = 0; j < k; j++) dot += (int64_t)x[j] * w[j];
  float f = (float)dot;
  f = f * xs;
  return f * ws;
}

static int8_t rand_i8(void) {
  int32_t r = rand_int(0, 15);
  return (int8_t)(r == 0 ? 127 : r == 1 ? -127 : rand_int(-127, 127)); /* extremes often */
}

static void check_matmul_i8(int64_t n, int64_t m, int64_t k) {
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
static void check_matmul_i8_grouped(const int32_t *sizes, int64_t groups, int64_t m, int64_t k) {
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

/* ------------------------------------------------------------------------------------------------ row ops */

static void check_rms_norm(int64_t n, int64_t d) {
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
static void fill_gate_up(float *g, float *u, int64_t count) {
  static const float edges[] = {0.0f, -0.0f, -100.0f, 100.0f, -88.0f, 88.0f, 1e-30f, -20.0f};
  for (int64_t i = 0; i < count; i++) {
    g[i] = (float)uniform(-8, 8);
    u[i] = (float)uniform(-2, 2);
    if (i % 13 == 5) g[i] = edges[(i / 13) % 8];
  }
}

static void check_silu_mul(int64_t n, int64_t d) {
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

static void check_convert(void) {
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

static void check_rope(void) {
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
static void check_add_gather_scatter(void) {
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
static float ref_fp8(uint8_t v) {
  int sign = v >> 7, e = (v >> 3) & 15, m = v & 7;
  if (e == 15 && m == 7) return sign ? -NAN : NAN;
  double mag = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
  return (float)(sign ? -mag : mag);
}

static void check_dequant_fp8(int out_dtype) {
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
static int by_rank(const void *pa, const void *pb) {
  const ranked *a = pa, *b = pb;
  if (a->key != b->key) return a->key > b->key ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

/* DeepSeek-V3 noaux_tc, as Kernels.moeGate documents it: scores = σ(logits) (unbiased, for the weights), selection =
 * scores + bias; groups scored by the sum of their top-2 selection scores (without a bias: their best), the best
 * topk_group groups kept (ties: lower group); top-k of selection over the kept experts (ties: lower id); weights =
 * scores of the chosen, / their sum when norm, · routed_scaling_factor. */
static void ref_gate(int32_t *ids, double *weights, const float *logits, const float *bias, int32_t e_count, int32_t topk,
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
static void check_moe_gate(const char *name, int64_t n, int32_t e_count, int32_t topk, int32_t n_group, int32_t topk_group,
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

static int32_t ref_argmax(const float *x, int64_t d) {
  for (int64_t j = 0; j < d; j++)
    if (isnan(x[j]) || x[j] == INFINITY) return -1;
  int64_t best = -1;
  for (int64_t j = 0; j < d; j++)
    if (x[j] != -INFINITY && (best < 0 || x[j] > x[best])) best = j;
  return (int32_t)best;
}

static void check_argmax(int64_t d) {
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

/* ------------------------------------------------------------------------------------------------ attention */

/* out[t,h] = Σ_{j < len[t]} softmax_j(q[t,h]·k[j,h] · scale) · v[j,h], all in double; |error| <= 1e-5 · max|v|. */
static void check_attention(int64_t nq, int64_t nk, int64_t heads, int64_t dqk, int64_t dv, float scale) {
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
static void check_mla(const char *name, int pages_dtype, int q_bf16, int64_t nq, int64_t heads, int64_t rank, int64_t rope,
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

static void check_mla_errors(void) {
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

static void check_errors(void) {
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

/* ------------------------------------------------------------------------------------------------ main */

/* The shared library as a loader sees it: every symbol resolved at load (RTLD_NOW), the ABI's entry points exported. */
static void check_shared_library(const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  const char *error = lib == NULL ? dlerror() : NULL;
  static const char *const names[] = {"mk_context_create", "mk_matmul", "mk_quantize_rows", "mk_matmul_i8_grouped",
                                      "mk_mla_decode", "mk_moe_gate", "mk_convert", "mk_argmax_rows"};
  int exported = 0;
  for (size_t i = 0; lib != NULL && i < sizeof names / sizeof names[0]; i++) exported += dlsym(lib, names[i]) != NULL;
  report(lib != NULL && exported == (int)(sizeof names / sizeof names[0]),
         "dlopen(%s, RTLD_NOW): %s, %d of %d entry points exported", path, lib != NULL ? "loads" : error, exported,
         (int)(sizeof names / sizeof names[0]));
  if (lib != NULL) dlclose(lib);
}

/* Usage: contract_check [path of libmoemesh_kernels.so to load-check]; MK_CHECK_ISA=<n> picks the path (default 0). */
int main(int argc, char **argv) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (argc > 1) check_shared_library(argv[1]);
  const char *isa_env = getenv("MK_CHECK_ISA");
  if (isa_env != NULL && *isa_env) g_isa = atoi(isa_env);
  if (!mk_cpu_supports(g_isa)) { /* a path this CPU cannot run: said, not failed, as the Java contract does */
    printf("contract_check: path %d skipped: this CPU cannot run it\n", g_isa);
    return 0;
  }
  g_c1 = mk_context_create(1, g_isa);
  g_c3 = mk_context_create(3, g_isa);
  if (g_c1 == NULL || g_c3 == NULL) {
    report(0, "mk_context_create(1 and 3 threads, isa %d): null (cpu supports it: %d)", g_isa, mk_cpu_supports(g_isa));
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return 1;
  }
  report(mk_context_isa(g_c1) == g_isa && mk_context_isa(g_c3) == g_isa && mk_context_threads(g_c1) == 1 &&
             mk_context_threads(g_c3) == 3,
         "contexts: isa %d/%d (asked %d), threads %d/%d", mk_context_isa(g_c1), mk_context_isa(g_c3), g_isa,
         mk_context_threads(g_c1), mk_context_threads(g_c3));

  static const int64_t sizes[] = {1, 7, 64, 1021};
  /* matmul: every (n, m, k) of the odd sizes, n and m up to 64 (and one n over the 128-row activation block) */
  for (int dt = 0; dt < 3; dt++) {
    int xd = dt == 2 ? MK_BF16 : MK_F32, wd = dt == 0 ? MK_F32 : MK_BF16;
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++)
        for (int c = 0; c < 4; c++) check_matmul(xd, wd, sizes[a], sizes[b], sizes[c]);
    check_matmul(xd, wd, 130, 21, 64);
    check_matmul(xd, wd, 3, 1021, 7);
  }
  check_matmul_heads(MK_F32, MK_F32, 7, 3, 21, 64);
  check_matmul_heads(MK_F32, MK_BF16, 1, 5, 33, 1021);
  check_matmul_heads(MK_BF16, MK_BF16, 7, 3, 21, 300);
  check_matmul_heads_km(MK_F32, 7, 3, 40, 64);
  check_matmul_heads_km(MK_F32, 1, 2, 7, 1021);
  check_matmul_heads_km(MK_BF16, 7, 3, 40, 65);
  check_matmul_heads_km(MK_BF16, 1, 2, 33, 7);

  for (int a = 0; a < 3; a++)
    for (int c = 0; c < 4; c++) {
      check_quantize_rows(MK_F32, sizes[a] + 1, sizes[c]);
      if (a == 1) check_quantize_rows(MK_BF16, sizes[a], sizes[c]);
    }
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < 4; c++) check_matmul_i8(sizes[a], sizes[b], sizes[c]);
  check_matmul_i8(9, 13, 64);    /* the most rows of the few-row kernel */
  check_matmul_i8(10, 13, 1021); /* the fewest of the GEMM tiles */
  check_matmul_i8(130, 20, 64);  /* two activation blocks */
  {
    static const int32_t g1[] = {3, 0, 12, 1, 0, 7};
    static const int32_t g2[] = {0, 0, 1};
    static const int32_t g3[] = {130, 9, 10};
    check_matmul_i8_grouped(g1, 6, 64, 1021);
    check_matmul_i8_grouped(g1, 6, 7, 7);
    check_matmul_i8_grouped(g2, 3, 1, 1);
    check_matmul_i8_grouped(g3, 3, 20, 64);
  }

  for (int a = 0; a < 3; a++)
    for (int c = 0; c < 4; c++) check_rms_norm(sizes[a], sizes[c]);
  for (int a = 0; a < 2; a++)
    for (int c = 0; c < 4; c++) check_silu_mul(sizes[a] + 2 * a, sizes[c]);
  check_silu_mul(64, 1021);
  check_convert();
  check_rope();
  check_add_gather_scatter();
  check_dequant_fp8(MK_F32);
  check_dequant_fp8(MK_BF16);

  check_moe_gate("DeepSeek-V3", 7, 256, 8, 8, 4, 1, 1, 2.5f, 0);
  check_moe_gate("DeepSeek-V3 ties", 3, 256, 8, 8, 4, 1, 1, 2.5f, 1);
  check_moe_gate("tied pairs", 5, 64, 6, 4, 2, 1, 1, 1.0f, 2);
  check_moe_gate("tied pairs no-bias", 5, 64, 6, 4, 2, 0, 0, 1.5f, 2);
  check_moe_gate("groups no-bias", 7, 64, 6, 8, 3, 0, 1, 1.0f, 0);
  check_moe_gate("ungrouped", 64, 7, 3, 1, 1, 0, 0, 1.0f, 0);
  check_moe_gate("ungrouped bias", 1, 7, 7, 1, 1, 1, 1, 2.0f, 0);

  for (int c = 0; c < 4; c++) check_argmax(sizes[c] + (c == 0 ? 1 : 0));
  check_argmax(1);

  check_attention(7, 7, 3, 7, 5, 0.3f);
  check_attention(20, 24, 2, 64, 7, 0.125f); /* two units of 16 query rows, after a 4-key prefix */
  check_attention(1, 1, 1, 1, 1, 1.0f);
  check_attention(33, 40, 1, 9, 64, 2.0f);

  {
    static const int32_t lens1[] = {1, 37, 600}; /* 600: two 512-position chunks */
    static const int32_t lens2[] = {7};
    static const int32_t lens3[] = {64, 1021, 5, 16};
    check_mla("tiny", MK_F32, 0, 1, 1, 1, 0, 1, lens2, 0.5f);
    check_mla("paged", MK_F32, 0, 3, 5, 24, 8, 5, lens1, 0.17f);
    check_mla("paged", MK_BF16, 0, 3, 5, 24, 8, 5, lens1, 0.17f);
    check_mla("paged", MK_BF16, 1, 3, 5, 24, 8, 5, lens1, 0.17f);
    check_mla("sharp", MK_F32, 0, 4, 3, 16, 4, 16, lens3, 3.0f); /* scores spread wide: the max moves, rescaling */
    check_mla("sharp", MK_BF16, 0, 4, 3, 16, 4, 16, lens3, 3.0f);
    check_mla("sharp", MK_BF16, 1, 4, 17, 16, 4, 16, lens3, 3.0f);
    check_mla("wide", MK_F32, 0, 2, 2, 64, 7, 7, lens3, 0.1f);
  }
  check_mla_errors();
  check_errors();

  mk_context_destroy(g_c1);
  mk_context_destroy(g_c3);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  fprintf(stderr, "contract_check: %.2f s\n", (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
