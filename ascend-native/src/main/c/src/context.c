/* Contexts and their thread pools. Workers spin briefly for the next job (decode issues many small ops in a
 * row, and a futex wake-up costs more than the op), then sleep on a condition variable. */
#include "mk_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#define MK_MAX_THREADS 256
#define MK_SPIN_NANOS 200000 /* how long an idle worker spins before it sleeps */
#define MK_PARALLEL_MIN_WORK (64 * 1024) /* below this many bytes touched, one thread does it all */

typedef struct mk_pool {
  pthread_t workers[MK_MAX_THREADS];
  int32_t num_workers;
  pthread_mutex_t call_lock; /* serializes calls on the context */
  pthread_mutex_t lock;
  pthread_cond_t wake;
  atomic_uint_fast64_t generation; /* bumped per job */
  atomic_int pending;              /* workers still running the current job */
  atomic_bool stop;
  /* the current job */
  mk_range_fn fn;
  void *arg;
  int64_t n, grain;
  int32_t parts;
} mk_pool;

typedef struct {
  mk_pool *pool;
  int32_t index; /* 1..num_workers; the caller is part 0 */
} mk_worker_arg;

/* A polite busy-wait step: tells the core we are spinning (frees issue slots for the other hyperthread). */
static inline void spin_pause(void) {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

static int64_t now_nanos(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void run_part(mk_pool *p, int32_t part) {
  if (part >= p->parts) return;
  int64_t chunks = (p->n + p->grain - 1) / p->grain;
  int64_t begin = chunks * part / p->parts * p->grain;
  int64_t end = chunks * (part + 1) / p->parts * p->grain;
  if (end > p->n) end = p->n;
  if (begin < end) p->fn(p->arg, begin, end);
}

static void *worker_main(void *raw) {
  mk_worker_arg *wa = raw;
  mk_pool *p = wa->pool;
  uint_fast64_t seen = 0; /* the pool starts at generation 0, before any job: a late-starting worker must still see job 1 */
  for (;;) {
    int64_t spin_until = now_nanos() + MK_SPIN_NANOS;
    uint_fast64_t g;
    for (uint32_t spins = 1;; spins++) {
      g = atomic_load_explicit(&p->generation, memory_order_acquire);
      if (g != seen || atomic_load(&p->stop)) break;
      spin_pause();
      if ((spins & 255) == 0 && now_nanos() > spin_until) { /* the clock only every 256 spins */
        pthread_mutex_lock(&p->lock);
        while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->wake, &p->lock);
        pthread_mutex_unlock(&p->lock);
      }
    }
    if (atomic_load(&p->stop)) break;
    seen = g;
    run_part(p, wa->index);
    atomic_fetch_sub_explicit(&p->pending, 1, memory_order_release);
  }
  free(wa);
  return NULL;
}

void mk_parallel_for(mk_context *ctx, int64_t n, int64_t grain, int64_t work, mk_range_fn fn, void *arg) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  mk_pool *p = ctx->pool;
  int64_t chunks = (n + grain - 1) / grain;
  if (p == NULL || p->num_workers == 0 || chunks < 2 || work < MK_PARALLEL_MIN_WORK) {
    fn(arg, 0, n);
    return;
  }
  int32_t parts = ctx->threads < chunks ? ctx->threads : (int32_t)chunks;
  pthread_mutex_lock(&p->call_lock);
  p->fn = fn;
  p->arg = arg;
  p->n = n;
  p->grain = grain;
  p->parts = parts;
  atomic_store(&p->pending, p->num_workers);
  pthread_mutex_lock(&p->lock);
  atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  run_part(p, 0);
  while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) spin_pause();
  pthread_mutex_unlock(&p->call_lock);
}

static void pool_destroy(mk_pool *p) {
  if (p == NULL) return;
  pthread_mutex_lock(&p->lock);
  atomic_store(&p->stop, true);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  for (int32_t i = 0; i < p->num_workers; i++) pthread_join(p->workers[i], NULL);
  pthread_mutex_destroy(&p->lock);
  pthread_mutex_destroy(&p->call_lock);
  pthread_cond_destroy(&p->wake);
  free(p);
}

static mk_pool *pool_create(int32_t workers) {
  mk_pool *p = calloc(1, sizeof(mk_pool));
  if (p == NULL) return NULL;
  pthread_mutex_init(&p->lock, NULL);
  pthread_mutex_init(&p->call_lock, NULL);
  pthread_cond_init(&p->wake, NULL);
  atomic_init(&p->generation, 0);
  atomic_init(&p->pending, 0);
  atomic_init(&p->stop, false);
  for (int32_t i = 0; i < workers; i++) {
    mk_worker_arg *wa = malloc(sizeof(mk_worker_arg));
    if (wa == NULL) break;
    wa->pool = p;
    wa->index = i + 1;
    if (pthread_create(&p->workers[i], NULL, worker_main, wa) != 0) {
      free(wa);
      break;
    }
    p->num_workers++;
  }
  if (p->num_workers != workers) {
    pool_destroy(p);
    return NULL;
  }
  return p;
}

MK_EXPORT int32_t mk_cpu_supports(int32_t isa) {
  if (isa == MK_ISA_PORTABLE) return 1;
#if defined(__x86_64__)
  __builtin_cpu_init();
  int base = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vnni");
  if (isa == MK_ISA_AVX512_NO_BF16) return base;
  if (isa == MK_ISA_AVX512) return base && __builtin_cpu_supports("avx512bf16");
#endif
  return 0;
}

MK_EXPORT int32_t mk_cpu_has_avx512(void) { return mk_cpu_supports(MK_ISA_AVX512); }

MK_EXPORT mk_context *mk_context_create(int32_t threads, int32_t isa) {
  if (threads < 1 || threads > MK_MAX_THREADS) return NULL;
  if (isa == -1)
    isa = mk_cpu_supports(MK_ISA_AVX512) ? MK_ISA_AVX512
          : mk_cpu_supports(MK_ISA_AVX512_NO_BF16) ? MK_ISA_AVX512_NO_BF16 : MK_ISA_PORTABLE;
  if (!mk_cpu_supports(isa)) return NULL;
  mk_context *ctx = calloc(1, sizeof(mk_context));
  if (ctx == NULL) return NULL;
  ctx->isa = &mk_isa_portable;
#if defined(__x86_64__)
  if (isa == MK_ISA_AVX512) ctx->isa = &mk_isa_avx512;
  if (isa == MK_ISA_AVX512_NO_BF16) {
    ctx->table = mk_isa_avx512;
    ctx->table.id = MK_ISA_AVX512_NO_BF16;
    ctx->table.matmul_bf16_tile = mk_isa_portable.matmul_bf16_tile;
    ctx->table.mla_scores_bf16 = NULL; /* VDPBF16PS; the pair goes together */
    ctx->table.mla_accumulate_bf16 = NULL;
    ctx->isa = &ctx->table;
  }
#endif
  ctx->threads = threads;
  if (threads > 1) {
    ctx->pool = pool_create(threads - 1);
    if (ctx->pool == NULL) {
      free(ctx);
      return NULL;
    }
  }
  return ctx;
}

MK_EXPORT void mk_context_destroy(mk_context *ctx) {
  if (ctx == NULL) return;
  pool_destroy(ctx->pool);
  free(ctx);
}

MK_EXPORT int32_t mk_context_isa(const mk_context *ctx) { return ctx == NULL ? -1 : ctx->isa->id; }

MK_EXPORT int32_t mk_context_threads(const mk_context *ctx) { return ctx == NULL ? -1 : ctx->threads; }
