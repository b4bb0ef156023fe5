/* Contexts and their thread pools.
 *
 * A job's range is cut into a few parts per thread, which the caller and the workers claim one at a time from
 * an atomic counter: whoever is free takes the next part, so a worker that is late (descheduled because other
 * processes share the cores) leaves its share to the others instead of holding the caller up, and the caller
 * waits only for parts already in progress. Part bounds depend on n, grain and the thread count only, never
 * on who ran what.
 *
 * Waiting threads spin briefly (decode issues many 10-100 us ops in a row, and a futex wake-up costs more
 * than the op), then sched_yield, which returns at once on an idle core but hands a shared core to whoever
 * else is runnable, then sleep on a condition variable.
 *
 * Under CPU contention (a container at its quota, a busy neighbour) a worker can be descheduled holding a part, and
 * the caller then waits a whole timeslice (milliseconds) for an op of tens of microseconds. When the caller waits for
 * parts in progress far longer than its own parts took, it runs the following calls alone for a while (solo), doubling
 * that time while it keeps happening, then tries both threads again: one thread on a core of its own beats two that
 * wait for each other. Every index computes the same whoever runs it, so this changes no bit. */
#include "mk_internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#define MK_MAX_THREADS 256
#define MK_PARTS_PER_THREAD 4 /* a late worker still finds parts to take, and fast threads take more */
#define MK_PAUSE_NANOS 5000   /* a waiting thread spins with `pause` this long before it yields its core */
#define MK_SPIN_NANOS 200000  /* how long an idle worker spins (pausing, then yielding) before it sleeps */
#define MK_WAIT_NANOS 100000  /* how long the caller spins for parts in progress before it sleeps */
#define MK_PARALLEL_MIN_WORK (64 * 1024) /* below this many bytes touched, one thread does it all */
#define MK_LATE_FACTOR 4              /* a wait this many times the caller's mean part... */
#define MK_LATE_SLACK_NANOS 200000    /* ...plus this is a late worker, not a slow part */
#define MK_SOLO_MIN_NANOS 20000000LL  /* the first solo stretch after a late worker */
#define MK_SOLO_MAX_NANOS 1000000000LL /* the longest, while workers keep being late */
#define MK_ON_TIME_RESET 256          /* on-time calls in a row after which a late worker starts the stretches over */

/* The job word: generation (bits 32-63) | parts (16-31) | next part to claim (0-15). One atomic word, so a
 * claim succeeds only against the job it was read from: a worker that wakes late for an old job cannot claim a
 * part of the next one by the old one's count, nor count a completion against a job it took no part of. */
#define JOB_GEN(w) ((uint32_t)((w) >> 32))
#define JOB_PARTS(w) ((int32_t)(((w) >> 16) & 0xFFFF))
#define JOB_NEXT(w) ((int32_t)((w) & 0xFFFF))

typedef struct mk_pool {
  pthread_t workers[MK_MAX_THREADS];
  int32_t num_workers;
  pthread_mutex_t call_lock; /* serializes calls on the context */
  pthread_mutex_t lock;
  pthread_cond_t wake;     /* a new job, or stop */
  pthread_cond_t finished; /* the caller's job has no part left running */
  _Atomic uint64_t job;    /* see JOB_GEN */
  atomic_int done;         /* parts of the current job finished */
  atomic_bool caller_asleep;
  atomic_bool stop;
  atomic_bool nomem;   /* a part of the current job could not allocate its scratch */
  uint32_t generation; /* the caller's: the last job published */
  int64_t solo_until, solo_nanos; /* the caller's: calls run alone until then; the current stretch's length */
  int32_t on_time;                /* the caller's: parallel calls in a row without a late worker */
  /* the current job: written only while no part of the previous one can still run */
  mk_range_fn fn;
  void *arg;
  int64_t n, grain;
} mk_pool;

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

/* One step of a wait that started at `start`: `pause` first, then give the core to anyone else runnable.
 * Returns the time, read every 64 pauses but after every yield (one can last a timeslice on a shared core). */
static int64_t wait_step(int64_t start, int64_t now, uint32_t spins) {
  if (now - start < MK_PAUSE_NANOS) {
    spin_pause();
    return (spins & 63) == 0 ? now_nanos() : now;
  }
  sched_yield();
  return now_nanos();
}

/* Set by mk_part_nomem on the thread whose range could not allocate; read and cleared after each range. */
static _Thread_local bool range_nomem;

void mk_part_nomem(void) { range_nomem = true; }

/* fn(arg, begin, end) on this thread; whether it reported an allocation failure. */
static bool run_range(mk_range_fn fn, void *arg, int64_t begin, int64_t end) {
  range_nomem = false;
  fn(arg, begin, end);
  return range_nomem;
}

static void run_part(mk_pool *p, int32_t part, int32_t parts) {
  int64_t chunks = (p->n + p->grain - 1) / p->grain;
  int64_t begin = chunks * part / parts * p->grain;
  int64_t end = chunks * (part + 1) / parts * p->grain;
  if (end > p->n) end = p->n;
  /* relaxed: published to the caller by the part's `done` increment */
  if (begin < end && run_range(p->fn, p->arg, begin, end)) atomic_store_explicit(&p->nomem, true, memory_order_relaxed);
}

/* Claims and runs parts of job `gen` until none is left; returns how many it ran. The job's fields are read only
 * between a claim and its completion, while the job cannot end; the acquiring claim sees the caller's writes before it
 * published. */
static int32_t run_parts(mk_pool *p, uint32_t gen) {
  int32_t ran = 0;
  uint64_t w = atomic_load_explicit(&p->job, memory_order_acquire);
  while (JOB_GEN(w) == gen && JOB_NEXT(w) < JOB_PARTS(w)) {
    if (!atomic_compare_exchange_weak_explicit(&p->job, &w, w + 1, memory_order_acquire, memory_order_acquire))
      continue; /* w now holds the current word */
    run_part(p, JOB_NEXT(w), JOB_PARTS(w));
    ran++;
    /* seq_cst, paired with the caller's caller_asleep: either it sees this part done or we see it asleep */
    if (atomic_fetch_add(&p->done, 1) + 1 == JOB_PARTS(w) && atomic_load(&p->caller_asleep)) {
      pthread_mutex_lock(&p->lock);
      pthread_cond_signal(&p->finished);
      pthread_mutex_unlock(&p->lock);
    }
    w = atomic_load_explicit(&p->job, memory_order_acquire);
  }
  return ran;
}

/* Waits for a job newer than `seen` (or stop) and returns its generation. */
static uint32_t await_job(mk_pool *p, uint32_t seen) {
  int64_t start = now_nanos(), now = start;
  for (uint32_t spins = 1;; spins++) {
    uint32_t g = JOB_GEN(atomic_load_explicit(&p->job, memory_order_acquire));
    if (g != seen || atomic_load(&p->stop)) return g;
    now = wait_step(start, now, spins);
    if (now - start > MK_SPIN_NANOS) {
      pthread_mutex_lock(&p->lock);
      while (JOB_GEN(atomic_load(&p->job)) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->wake, &p->lock);
      pthread_mutex_unlock(&p->lock);
    }
  }
}

static void *worker_main(void *raw) {
  mk_pool *p = raw;
  uint32_t seen = 0; /* the pool starts at generation 0, before any job: a late-starting worker must still see job 1 */
  for (;;) {
    seen = await_job(p, seen);
    if (atomic_load(&p->stop)) break;
    run_parts(p, seen);
  }
  return NULL;
}

/* Waits until all `parts` parts are done: every part is claimed by now, so this waits only for parts that
 * some thread is running. Sleeps after MK_WAIT_NANOS, so a long part on a descheduled worker leaves this
 * core idle, where the scheduler can move that worker. */
static void await_parts(mk_pool *p, int32_t parts) {
  int64_t start = now_nanos(), now = start;
  for (uint32_t spins = 1; atomic_load_explicit(&p->done, memory_order_acquire) < parts; spins++) {
    now = wait_step(start, now, spins);
    if (now - start > MK_WAIT_NANOS) {
      pthread_mutex_lock(&p->lock);
      atomic_store(&p->caller_asleep, true); /* seq_cst, paired with the workers' done */
      while (atomic_load(&p->done) < parts) pthread_cond_wait(&p->finished, &p->lock);
      atomic_store(&p->caller_asleep, false);
      pthread_mutex_unlock(&p->lock);
    }
  }
}

int32_t mk_parallel_for(mk_context *ctx, int64_t n, int64_t grain, int64_t work, mk_range_fn fn, void *arg) {
  if (n <= 0) return MK_OK;
  if (grain < 1) grain = 1;
  mk_pool *p = ctx->pool;
  int64_t chunks = (n + grain - 1) / grain;
  if (p == NULL || p->num_workers == 0 || chunks < 2 || work < MK_PARALLEL_MIN_WORK)
    return run_range(fn, arg, 0, n) ? MK_E_NOMEM : MK_OK;
  int64_t most = (int64_t)ctx->threads * MK_PARTS_PER_THREAD;
  int32_t parts = (int32_t)(chunks < most ? chunks : most);
  pthread_mutex_lock(&p->call_lock);
  int64_t start = now_nanos();
  if (start < p->solo_until) {
    pthread_mutex_unlock(&p->call_lock);
    return run_range(fn, arg, 0, n) ? MK_E_NOMEM : MK_OK;
  }
  p->fn = fn;
  p->arg = arg;
  p->n = n;
  p->grain = grain;
  atomic_store_explicit(&p->done, 0, memory_order_relaxed); /* published by the job word's release */
  atomic_store_explicit(&p->nomem, false, memory_order_relaxed);
  uint32_t gen = ++p->generation;
  atomic_store_explicit(&p->job, (uint64_t)gen << 32 | (uint64_t)parts << 16, memory_order_release);
  pthread_mutex_lock(&p->lock);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  int32_t mine = run_parts(p, gen);
  int64_t own = now_nanos();
  await_parts(p, parts);
  int64_t waited = now_nanos() - own;
  if (mine > 0 && waited > MK_LATE_FACTOR * (own - start) / mine + MK_LATE_SLACK_NANOS) { /* a worker was late */
    p->solo_nanos = p->solo_nanos == 0 ? MK_SOLO_MIN_NANOS : p->solo_nanos * 2;
    if (p->solo_nanos > MK_SOLO_MAX_NANOS) p->solo_nanos = MK_SOLO_MAX_NANOS;
    p->solo_until = own + waited + p->solo_nanos;
    p->on_time = 0;
  } else if (mine > 0 && ++p->on_time >= MK_ON_TIME_RESET) {
    p->solo_nanos = 0;
  }
  bool nomem = atomic_load_explicit(&p->nomem, memory_order_relaxed); /* every part's `done` was acquired */
  pthread_mutex_unlock(&p->call_lock);
  return nomem ? MK_E_NOMEM : MK_OK;
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
  pthread_cond_destroy(&p->finished);
  free(p);
}

static mk_pool *pool_create(int32_t workers) {
  mk_pool *p = calloc(1, sizeof(mk_pool));
  if (p == NULL) return NULL;
  pthread_mutex_init(&p->lock, NULL);
  pthread_mutex_init(&p->call_lock, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->finished, NULL);
  atomic_init(&p->job, 0);
  atomic_init(&p->done, 0);
  atomic_init(&p->caller_asleep, false);
  atomic_init(&p->stop, false);
  for (int32_t i = 0; i < workers; i++) {
    if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) break;
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
  if (isa == MK_ISA_AVX2)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#endif
  return 0;
}

MK_EXPORT int32_t mk_cpu_has_avx512(void) { return mk_cpu_supports(MK_ISA_AVX512); }

MK_EXPORT mk_context *mk_context_create(int32_t threads, int32_t isa) {
  if (threads < 1 || threads > MK_MAX_THREADS) return NULL;
  if (isa == -1)
    isa = mk_cpu_supports(MK_ISA_AVX512) ? MK_ISA_AVX512
          : mk_cpu_supports(MK_ISA_AVX512_NO_BF16) ? MK_ISA_AVX512_NO_BF16
          : mk_cpu_supports(MK_ISA_AVX2)           ? MK_ISA_AVX2
                                                   : MK_ISA_PORTABLE;
  if (!mk_cpu_supports(isa)) return NULL;
  mk_context *ctx = calloc(1, sizeof(mk_context));
  if (ctx == NULL) return NULL;
  ctx->isa = &mk_isa_portable;
#if defined(__x86_64__)
  if (isa == MK_ISA_AVX512) ctx->isa = &mk_isa_avx512;
  if (isa == MK_ISA_AVX2) ctx->isa = &mk_isa_avx2;
  if (isa == MK_ISA_AVX512_NO_BF16) {
    ctx->table = mk_isa_avx512;
    ctx->table.id = MK_ISA_AVX512_NO_BF16;
    ctx->table.matmul_bf16_tile = mk_isa_portable.matmul_bf16_tile;
    ctx->table.mla_tile_bf16 = NULL; /* VDPBF16PS */
    ctx->table.heads_km_bf16_unit = NULL;
    ctx->table.heads_km_bf16_pairs = NULL;
    ctx->table.gemv_bf16_rows = NULL;
    ctx->table.bf16_peak_loop = mk_isa_portable.bf16_peak_loop;
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
