/* STREAM's triad, a[i] = b[i] + s·c[i], on the context's threads: the machine's memory bandwidth, the roofline every
 * benchmark reads its kernels against. In C, as STREAM is, so the yardstick does not depend on what a JIT makes of a
 * loop (a Java triad read up to 1.5x lower than C's on an AVX2 machine). */
#include "mk_internal.h"

typedef struct {
  float *a;
  const float *b, *c;
  float s;
} triad_job;

/* 256-bit loads and stores where the CPU has them (picked at load time): with SSE2's 128-bit ones this loop read
 * 0.77-0.86 of an OpenMP triad built with -march=native on an AVX2 machine. */
#if defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
static void triad_range(void *raw, int64_t begin, int64_t end) {
  const triad_job *j = raw;
  float *restrict a = j->a;
  const float *restrict b = j->b, *restrict c = j->c;
  float s = j->s;
  for (int64_t i = begin; i < end; i++) a[i] = b[i] + s * c[i];
}

MK_EXPORT int32_t mk_stream_triad(mk_context *ctx, float *a, const float *b, const float *c, int64_t n, float s) {
  if (ctx == NULL || a == NULL || b == NULL || c == NULL) return MK_E_NULL;
  if (n < 0) return MK_E_SHAPE;
  triad_job j = {a, b, c, s};
  mk_parallel_for(ctx, n, 1 << 14, n * 12, triad_range, &j); /* parts of 64 KiB multiples */
  return MK_OK;
}
