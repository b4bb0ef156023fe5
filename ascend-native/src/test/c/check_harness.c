/* The contract check's harness: counters, the contexts under test, seeded random numbers, references' helpers. */
#include "contract_check.h"

/* ------------------------------------------------------------------------------------------------ harness */

int g_passed, g_failed;
mk_context *g_c1, *g_c3; /* 1 and 3 threads, same ISA */
int g_isa = MK_ISA_PORTABLE;

void report(int ok, const char *fmt, ...) {
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

uint64_t g_rng = 0x9E3779B97F4A7C15ull;
void seed(uint64_t s) { g_rng = s * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull; }
uint64_t next_u64(void) { /* splitmix64 */
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double uniform(double lo, double hi) { return lo + (hi - lo) * (double)(next_u64() >> 11) * 0x1p-53; }
int32_t rand_int(int32_t lo, int32_t hi) { return lo + (int32_t)(next_u64() % (uint64_t)(hi - lo + 1)); }

uint32_t fbits(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}
float bitsf(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}

/* BF16 -> F32: the upper half of an F32. */
float ref_bf16_to_f32(uint16_t h) { return bitsf((uint32_t)h << 16); }

/* |value| of BF16 magnitude bits m (sign clear) as a double, exponent 255 read as a finite 2^128 · (1 + f): the
 * rounding below may then step from the largest finite BF16 to 0x7F80, which is +inf. */
double bf16_magnitude(uint32_t m) {
  uint32_t e = (m >> 7) & 0xFF, f = m & 0x7F;
  return e == 0 ? ldexp((double)f, -133) : ldexp((double)(128 + f), (int)e - 134);
}

/* F32 -> BF16, round to nearest even, by comparing the distances to the two neighbours in double (exact there). */
uint16_t ref_f32_to_bf16(float f) {
  uint32_t b = fbits(f), sign = b & 0x80000000u;
  if (isnan(f)) return (uint16_t)((b >> 16) | 0x0040u); /* sign and upper payload, quiet */
  if (isinf(f)) return (uint16_t)(b >> 16);
  uint32_t lo = (b & 0x7FFFFFFFu) >> 16; /* toward zero */
  double v = fabs((double)f), below = v - bf16_magnitude(lo), above = bf16_magnitude(lo + 1) - v;
  uint32_t m = below < above ? lo : below > above ? lo + 1 : (lo & 1) ? lo + 1 : lo;
  return (uint16_t)((sign >> 16) | m);
}

uint16_t rand_bf16(double lo, double hi) { return ref_f32_to_bf16((float)uniform(lo, hi)); }

void *xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (p == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  return p;
}


/* An F32 output of n rows of d at stride ld, the gaps (and one row's worth past the end) filled with SENTINEL. */
float *out_f32(int64_t n, int64_t ld) {
  size_t count = (size_t)((n + 1) * ld);
  float *o = xmalloc(sizeof(float) * count);
  for (size_t i = 0; i < count; i++) o[i] = bitsf(SENTINEL);
  return o;
}

int gaps_intact_f32(const float *o, int64_t n, int64_t d, int64_t ld) {
  for (int64_t i = 0; i < (n + 1) * ld; i++)
    if ((i % ld >= d || i >= n * ld) && fbits(o[i]) != SENTINEL) return 0;
  return 1;
}

int same_bits(const void *a, const void *b, size_t bytes) { return memcmp(a, b, bytes) == 0; }
