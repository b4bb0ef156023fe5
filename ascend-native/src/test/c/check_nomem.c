/* The header's promise for scratch memory: an op that cannot allocate answers MK_E_NOMEM and the process goes on.
 * This executable links the library's objects, so its malloc and aligned_alloc below are the library's too: a check
 * lets the first `budget` allocations through and fails every later one, for budget 0, 1, 2, ... until the op
 * succeeds, so each allocation the op makes (on the caller or in a part on a pool thread) fails once. */
#include "contract_check.h"

#include <stdatomic.h>
#include <stdbool.h>

extern void *__libc_malloc(size_t bytes);
extern void *__libc_memalign(size_t alignment, size_t bytes);

static atomic_bool limited;
static atomic_long budget;

static int allowed(void) { return !atomic_load(&limited) || atomic_fetch_sub(&budget, 1) > 0; }

void *malloc(size_t bytes) { return allowed() ? __libc_malloc(bytes) : NULL; }
void *aligned_alloc(size_t alignment, size_t bytes) { return allowed() ? __libc_memalign(alignment, bytes) : NULL; }

/* One op's inputs, allocated before the budget applies. */
typedef int32_t (*op_fn)(mk_context *ctx, void *inputs);

/* Runs op under budgets 0, 1, ... (at most 256) until it returns MK_OK: every earlier answer must be MK_E_NOMEM. */
static void check_budgets(const char *name, mk_context *ctx, op_fn op, void *inputs) {
  int32_t rc = MK_E_NOMEM;
  long b = 0, failures = 0, wrong = 0;
  for (; b <= 256; b++) {
    atomic_store(&budget, b);
    atomic_store(&limited, true);
    rc = op(ctx, inputs);
    atomic_store(&limited, false);
    if (rc == MK_OK) break;
    failures++;
    if (rc != MK_E_NOMEM) wrong++;
  }
  report(rc == MK_OK && wrong == 0, "%s (%d threads): %ld allocation failures answered MK_E_NOMEM (%ld otherwise), then MK_OK",
         name, mk_context_threads(ctx), failures - wrong, wrong);
}

typedef struct {
  int8_t *xq, *w;
  float *xs, *ws, *out;
  int32_t offsets[3];
  const int8_t *wg[2];
  const float *wsg[2];
} i8_inputs;

static int32_t op_matmul_i8(mk_context *ctx, void *raw) {
  i8_inputs *in = raw; /* 40 rows: the GEMM tiles and their scratch */
  return mk_matmul_i8(ctx, in->out, 48, in->xq, 100, in->xs, in->w, 100, in->ws, 40, 48, 100);
}

static int32_t op_matmul_i8_grouped(mk_context *ctx, void *raw) {
  i8_inputs *in = raw;
  return mk_matmul_i8_grouped(ctx, in->out, 48, in->xq, 100, in->xs, in->offsets, 2, in->wg, 100, in->wsg, 48, 100);
}

typedef struct {
  float *q, *k, *v, *out, *gate, *up, *logits;
  int32_t lens[40], *ids;
  int8_t *q8;
  uint16_t *x16, *w16;
} float_inputs;

static int32_t op_attention(mk_context *ctx, void *raw) {
  float_inputs *in = raw; /* 40 rows of 2 heads, 24 / 16 wide */
  return mk_attention(ctx, in->out, 16, in->q, 24, in->k, 24, in->v, 16, 40, 40, 2, 24, 16, in->lens, 0.2f);
}

static int32_t op_moe_gate(mk_context *ctx, void *raw) {
  float_inputs *in = raw; /* 40 tokens, 16 experts in 4 groups, top 4 of the best 2 groups */
  return mk_moe_gate(ctx, in->ids, in->out, in->logits, 16, NULL, 40, 16, 4, 4, 2, 1, 1.0f);
}

static int32_t op_silu_mul_quantize(mk_context *ctx, void *raw) {
  float_inputs *in = raw;
  return mk_silu_mul_quantize(ctx, in->q8, 64, in->out, in->gate, 64, in->up, 64, 40, 64);
}

static int32_t op_heads_km(mk_context *ctx, void *raw) {
  float_inputs *in = raw; /* BF16 x and w: the units' scratch where the path has them */
  return mk_matmul_heads_km(ctx, in->out, 32, in->x16, MK_BF16, 64, in->w16, MK_BF16, 8, 2, 32, 64);
}

static int32_t op_mla_decode(mk_context *ctx, void *raw) {
  float_inputs *in = raw; /* 3 rows of 4 heads over 40 positions in pages of 8; F32 query and pages */
  static const int32_t table[3 * 5] = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 4, 3, 2, 1, 0};
  static const int32_t lens[3] = {40, 17, 1};
  return mk_mla_decode(ctx, in->out, 16, in->q, 16, in->q + 3 * 4 * 16, 8, MK_F32, 3, 4, 16, 8, in->k, MK_F32, 5, 8,
                       table, 5, 5, lens, 0.3f);
}

void check_nomem(void) {
  seed(91);
  i8_inputs a = {.xq = xmalloc(40 * 100), .w = xmalloc(48 * 100), .xs = xmalloc(4 * 40), .ws = xmalloc(4 * 48),
                 .out = xmalloc(4 * 40 * 48), .offsets = {0, 15, 40}};
  for (int i = 0; i < 40 * 100; i++) a.xq[i] = rand_i8();
  for (int i = 0; i < 48 * 100; i++) a.w[i] = rand_i8();
  for (int i = 0; i < 40; i++) a.xs[i] = (float)uniform(0.5, 1);
  for (int i = 0; i < 48; i++) a.ws[i] = (float)uniform(0.5, 1);
  a.wg[0] = a.wg[1] = a.w, a.wsg[0] = a.wsg[1] = a.ws;

  float_inputs f = {.q = xmalloc(4 * 40 * 2 * 24), .k = xmalloc(4 * 40 * 2 * 24), .v = xmalloc(4 * 40 * 2 * 16),
                    .out = xmalloc(4 * 40 * 2 * 32), .gate = xmalloc(4 * 40 * 64), .up = xmalloc(4 * 40 * 64),
                    .logits = xmalloc(4 * 40 * 16), .ids = xmalloc(4 * 40 * 4), .q8 = xmalloc(40 * 64),
                    .x16 = xmalloc(2 * 8 * 2 * 64), .w16 = xmalloc(2 * 2 * 64 * 32)};
  for (int i = 0; i < 40 * 2 * 24; i++) f.q[i] = (float)uniform(-1, 1), f.k[i] = (float)uniform(-1, 1);
  for (int i = 0; i < 40 * 2 * 16; i++) f.v[i] = (float)uniform(-1, 1);
  for (int i = 0; i < 40 * 64; i++) f.gate[i] = (float)uniform(-2, 2), f.up[i] = (float)uniform(-2, 2);
  for (int i = 0; i < 40 * 16; i++) f.logits[i] = (float)uniform(-3, 3);
  for (int i = 0; i < 8 * 2 * 64; i++) f.x16[i] = rand_bf16(-1, 1);
  for (int i = 0; i < 2 * 64 * 32; i++) f.w16[i] = rand_bf16(-1, 1);
  for (int i = 0; i < 40; i++) f.lens[i] = i + 1;

  mk_context *contexts[2] = {g_c1, g_c3};
  for (int c = 0; c < 2; c++) {
    check_budgets("mk_matmul_i8, 40 x 48 x 100", contexts[c], op_matmul_i8, &a);
    check_budgets("mk_matmul_i8_grouped, groups of 15 and 25 rows", contexts[c], op_matmul_i8_grouped, &a);
    check_budgets("mk_attention, 40 rows of 2 heads", contexts[c], op_attention, &f);
    check_budgets("mk_moe_gate, 40 tokens of 16 experts", contexts[c], op_moe_gate, &f);
    check_budgets("mk_silu_mul_quantize, 40 x 64", contexts[c], op_silu_mul_quantize, &f);
    check_budgets("mk_matmul_heads_km, BF16", contexts[c], op_heads_km, &f);
    check_budgets("mk_mla_decode, 3 rows of 4 heads", contexts[c], op_mla_decode, &f);
  }
  free(a.xq), free(a.w), free(a.xs), free(a.ws), free(a.out);
  free(f.q), free(f.k), free(f.v), free(f.out), free(f.gate), free(f.up), free(f.logits), free(f.ids), free(f.q8),
      free(f.x16), free(f.w16);
}
