/* Absorbed MLA decode attention over a paged latent cache, with AMLA's online softmax.
 *
 * Every head of a query row reads the same latent vector per position (MLA is multi-query in the latent
 * space), so each position is converted to F32 once and used by all heads. Work is split into chunks per query
 * row, ceil(length / CHUNK) of equal size in whole blocks — fixed by the row's own length, never by the thread count
 * or the batch — each producing a partial (M, l, o); partials are combined in chunk order, so results never depend
 * on threads or batch. Equal chunks let a lone decode row use both threads: 576 positions as 288 + 288, not 512 + 64
 * (a batch-1 call 37.4-39.0 -> 28.8-30.7 us in a driver, one library per process; batch 32 alike).
 *
 * AMLA ("multiplication to addition"): scores are taken in base 2 and the running max M is an integer, so
 * every rescaling factor is 2^-Δ for an integer Δ, applied by subtracting Δ from the F32 exponent field.
 *
 * A BF16 query attends in BF16 as DeepSeek's reference does: the weights multiply the values rounded to BF16
 * (VDPBF16PS takes two positions per instruction), the denominators sum them unrounded. */
#include "mk_internal.h"

#include <math.h>
#include <stdlib.h>

#define CHUNK 512 /* positions per work item, at most */
#define BLOCK 16  /* positions converted and scored together */
/* When a batch has fewer work items than the threads can share, items also split the heads into up to
 * HEAD_GROUPS groups (the tile kernel: one group per tile of TILE_HEADS heads), so one sequence's decode uses every
 * core. Each group reads the item's latent rows again, so a batch with items enough for every thread keeps all heads
 * in one group: each row is read once, from memory, for all heads (in a decode step the cache is not in L2 by the
 * time a second group came by). A head's numbers do not depend on its group (each head is computed on its own), so
 * neither does the result. */
#define HEAD_GROUPS 4
#define ITEMS_PER_THREAD 4 /* from this many work items per thread, one head group */
#define LOG2E 1.44269504088896340736f
#define TILE_HEADS 16 /* heads per call of the BF16 tile kernel, one per lane */
#define RUN 16        /* rows of a tile kernel's run */

typedef struct {
  const mk_isa *isa;
  const float *q_latent, *q_rope;
  int64_t ldq, ldr, heads, rank, rope;
  const uint16_t *q16; /* over BF16 pages with the BF16 row kernels: q_latent ‖ q_rope in BF16, rows of rank + rope */
  int32_t bf16_weights; /* a BF16 query: the weights multiply the values as BF16 */
  const void *pages;
  int32_t pages_bf16;
  int64_t page_size, num_pages;
  const int32_t *block_table;
  int64_t ldb;
  const int32_t *context_lens;
  float scale2; /* softmax_scale · log2(e) */
  int64_t chunks_per_row, items; /* items = rows × chunks_per_row */
  int64_t groups;                /* head groups per item */
  /* partials, per work item: m[heads], l[heads], o[heads * rank] */
  int32_t *part_m;
  float *part_l, *part_o;
} mla_job;

typedef struct { /* a thread's buffers for the tile kernel */
  uint32_t *qt;       /* each tile's query, tile_query's layout */
  int32_t *m;         /* each tile's running state, TILE_HEADS lanes a tile */
  float *l;
  float **orow;       /* each lane's output row */
  uint16_t *copy;
  float *spare; /* the output row of a lane with no head */
  const char **lines; /* cache lines to prefetch */
} tile_scratch;

/* AMLA's online softmax over one block's scores s[0:count] of one head (m, l, o its running state): the max
 * moves up to an integer, what was summed is scaled by 2^-Δ, and s becomes the block's weights 2^(s - m). */
static void online_softmax(const mk_isa *isa, int32_t *m, float *l, float *o, float *s, int64_t count, int64_t rank) {
  float block_max = -INFINITY;
  for (int64_t p = 0; p < count; p++)
    if (s[p] > block_max) block_max = s[p];
  int32_t delta = mk_mla_raise(m, l, mk_mla_ceiling(block_max));
  if (delta > 0)
    for (int64_t c = 0; c < rank; c++) o[c] = mk_scale_down_pow2(o[c], delta);
  *l += isa->exp2_sum(s, count, (float)*m); /* the weights, <= 1 */
}

/* rows[i] = the latent row of position begin + i of row t, for i < count: one division, then page by page. */
static void kv_rows(const mla_job *j, int64_t t, int64_t begin, int64_t count, const void **rows) {
  size_t row_bytes = (size_t)(j->rank + j->rope) * (j->pages_bf16 ? 2 : 4), page_bytes = (size_t)j->page_size * row_bytes;
  int64_t block = begin / j->page_size, in_page = begin % j->page_size;
  const char *pages = j->pages, *page = pages + (size_t)j->block_table[t * j->ldb + block] * page_bytes;
  for (int64_t i = 0; i < count; i++, in_page++) {
    if (in_page == j->page_size) in_page = 0, page = pages + (size_t)j->block_table[t * j->ldb + ++block] * page_bytes;
    rows[i] = page + (size_t)in_page * row_bytes;
  }
}

/* What a work unit covers: row t's positions [begin, end) (empty past its context) for heads [h_begin, h_end).
 * Group-major: the threads' contiguous ranges of units then cover every chunk of a row, so a short last chunk does
 * not leave one thread idle while another scores a whole one. */
typedef struct {
  int64_t item, t, h_begin, h_end, begin, end;
} mla_unit;

/* A row of `len` positions is this many chunks (the one rule: units, the combine and the batch's item count). */
static inline int64_t row_chunks(int64_t len) {
  return (len + CHUNK - 1) / CHUNK;
}

static mla_unit unit_of(const mla_job *j, int64_t unit) {
  int64_t groups = j->groups, items = j->items, item = unit % items, group = unit / items;
  mla_unit u = {.item = item, .t = item / j->chunks_per_row, .h_begin = j->heads * group / groups,
                .h_end = j->heads * (group + 1) / groups};
  int64_t len = j->context_lens[u.t], chunks = row_chunks(len);
  int64_t size = ((len + chunks - 1) / chunks + 2 * RUN - 1) / (2 * RUN) * (2 * RUN); /* equal chunks of whole blocks */
  u.begin = item % j->chunks_per_row * size, u.end = len;
  if (u.end > u.begin + size) u.end = u.begin + size;
  if (u.end < u.begin) u.end = u.begin;
  return u;
}

/* A tile's queries as the tile kernel takes them: for 8-column step s and quarter g, lane 4j + r of register 4s + g
 * holds head 4j + g's column pair 4s + r; zeros past width and for lanes of no head. */
static void tile_query(uint32_t *qt, const uint16_t *q, int64_t hn, int64_t width) {
  int64_t steps = (width + 7) / 8;
  memset(qt, 0, sizeof(uint32_t) * (size_t)(64 * steps));
  for (int64_t h = 0; h < hn; h++)
    for (int64_t s = 0; s < steps; s++) /* 8 columns, 4 pairs, in 4 consecutive lanes */
      memcpy(qt + 64 * s + 16 * (h % 4) + 4 * (h / 4), q + h * width + 8 * s,
             sizeof(uint16_t) * (size_t)(width - 8 * s < 8 ? width - 8 * s : 8));
}

/* The block of count <= 2·RUN rows of row t from position b as the tile kernel takes it: each run of RUN rows straight
 * from its page where it is whole and contiguous, else copied into sc->copy (zeros past the block). */
static void block_runs(const mla_job *j, int64_t t, int64_t b, int64_t count, tile_scratch *sc, const uint16_t **runs) {
  int64_t width = j->rank + j->rope;
  const void *rows[RUN];
  for (int64_t r = 0; r * RUN < count; r++) {
    int64_t n = count - r * RUN < RUN ? count - r * RUN : RUN;
    kv_rows(j, t, b + r * RUN, n, rows);
    int whole = n == RUN;
    for (int64_t i = 1; whole && i < RUN; i++) whole = (const uint16_t *)rows[i] == (const uint16_t *)rows[0] + i * width;
    if (whole) {
      runs[r] = rows[0];
      continue;
    }
    uint16_t *copy = sc->copy + r * RUN * width;
    for (int64_t i = 0; i < RUN; i++)
      if (i < n) memcpy(copy + i * width, rows[i], sizeof(uint16_t) * (size_t)width);
      else memset(copy + i * width, 0, sizeof(uint16_t) * (size_t)width);
    runs[r] = copy;
  }
}

/* The cache lines of the block after the one at b in unit u (past u's end: the first block of `next`, if any) into
 * sc->lines; returns their count. */
static int64_t next_block_lines(const mla_job *j, const mla_unit *u, int64_t b, const mla_unit *next, tile_scratch *sc) {
  int64_t t = u->t, from = b + 2 * RUN, end = u->end;
  if (from >= end && next->t >= 0) t = next->t, from = next->begin, end = next->end;
  int64_t count = end - from < 2 * RUN ? end - from : 2 * RUN, lines = 0;
  if (count <= 0) return 0;
  const void *rows[2 * RUN];
  kv_rows(j, t, from, count, rows);
  for (int64_t p = 0; p < count; p++)
    for (int64_t c = 0; c < (j->rank + j->rope) * 2; c += 64) sc->lines[lines++] = (const char *)rows[p] + c;
  return lines;
}

/* Unit u block by block through the tile kernel, each block's rows read from memory once for all the unit's tiles of
 * TILE_HEADS heads, and its successor prefetched during the first tile's scores; m, l, o the item's partials. */
static void mla_tile(const mla_job *j, const mla_unit *u, int32_t *m, float *l, float *o, tile_scratch *sc,
                     const mla_unit *next) {
  int64_t width = j->rank + j->rope, heads = u->h_end - u->h_begin, tiles = (heads + TILE_HEADS - 1) / TILE_HEADS;
  int64_t qt_size = 64 * ((width + 7) / 8);
  for (int64_t i = 0; i < tiles; i++) {
    int64_t first = u->h_begin + i * TILE_HEADS, hn = heads - i * TILE_HEADS < TILE_HEADS ? heads - i * TILE_HEADS : TILE_HEADS;
    tile_query(sc->qt + i * qt_size, j->q16 + (u->t * j->heads + first) * width, hn, width);
    for (int64_t h = 0; h < TILE_HEADS; h++) {
      sc->m[i * TILE_HEADS + h] = MK_MLA_M_NONE, sc->l[i * TILE_HEADS + h] = 0;
      sc->orow[i * TILE_HEADS + h] = h < hn ? o + (first + h) * j->rank : sc->spare;
    }
  }
  memset(sc->spare, 0, sizeof(float) * (size_t)j->rank);
  for (int64_t b = u->begin; b < u->end; b += 2 * RUN) {
    int64_t count = u->end - b < 2 * RUN ? u->end - b : 2 * RUN;
    const uint16_t *runs[2];
    block_runs(j, u->t, b, count, sc, runs);
    int64_t lines = next_block_lines(j, u, b, next, sc);
    for (int64_t i = 0; i < tiles; i++)
      j->isa->mla_tile_bf16(sc->m + i * TILE_HEADS, sc->l + i * TILE_HEADS, sc->orow + i * TILE_HEADS, sc->qt + i * qt_size, runs, width,
                            count, width, j->rank, j->scale2, sc->lines, i == 0 ? lines : 0, b + 2 * RUN >= u->end);
  }
  for (int64_t h = 0; h < heads; h++) m[u->h_begin + h] = sc->m[h], l[u->h_begin + h] = sc->l[h];
}

static void mla_item(const mla_job *j, int64_t unit, int64_t next_unit, float *kv, float *s, tile_scratch *sc) {
  mla_unit u = unit_of(j, unit);
  int64_t item = u.item, h_begin = u.h_begin, h_end = u.h_end, t = u.t, begin = u.begin, end = u.end;
  int64_t width = j->rank + j->rope;
  int32_t *m = j->part_m + item * j->heads;
  float *l = j->part_l + item * j->heads, *o = j->part_o + item * j->heads * j->rank;
  for (int64_t h = h_begin; h < h_end; h++) m[h] = MK_MLA_M_NONE, l[h] = 0;
  memset(o + h_begin * j->rank, 0, sizeof(float) * (size_t)((h_end - h_begin) * j->rank));
  if (j->q16 != NULL) {
    mla_unit next = next_unit >= 0 ? unit_of(j, next_unit) : (mla_unit){.t = -1};
    mla_tile(j, &u, m, l, o, sc, &next);
    return;
  }
  const void *rows[BLOCK];
  for (int64_t b = begin; b < end; b += BLOCK) {
    int64_t count = end - b < BLOCK ? end - b : BLOCK;
    kv_rows(j, t, b, count, rows);
    for (int64_t p = 0; p < count; p++) {
      const void *row = rows[p];
      if (j->pages_bf16) j->isa->bf16_to_f32(kv + p * width, row, width);
      else memcpy(kv + p * width, row, sizeof(float) * (size_t)width);
    }
    if (j->isa->mla_scores_heads != NULL) { /* the block's rows read once per tile of heads */
      const float *ql = j->q_latent + t * j->heads * j->ldq, *qr = j->q_rope + t * j->heads * j->ldr;
      for (int64_t h = h_begin; h < h_end; h += MK_MLA_HEADS)
        j->isa->mla_scores_heads(s + h * BLOCK, BLOCK, ql + h * j->ldq, j->ldq, qr + h * j->ldr, j->ldr,
                                 h_end - h < MK_MLA_HEADS ? h_end - h : MK_MLA_HEADS, kv, count, width, j->rank, j->scale2);
      for (int64_t h = h_begin; h < h_end; h++) {
        float *sh = s + h * BLOCK;
        online_softmax(j->isa, &m[h], &l[h], o + h * j->rank, sh, count, j->rank);
        if (j->bf16_weights)
          for (int64_t p = 0; p < count; p++) sh[p] = mk_bf16_to_f32(mk_f32_to_bf16(sh[p]));
      }
      for (int64_t h = h_begin; h < h_end; h += MK_MLA_HEADS)
        j->isa->mla_accumulate_heads(o + h * j->rank, j->rank, s + h * BLOCK, BLOCK,
                                     h_end - h < MK_MLA_HEADS ? h_end - h : MK_MLA_HEADS, kv, count, width, j->rank);
      continue;
    }
    for (int64_t h = h_begin; h < h_end; h++) {
      const float *ql = j->q_latent + (t * j->heads + h) * j->ldq, *qr = j->q_rope + (t * j->heads + h) * j->ldr;
      j->isa->mla_scores(s, ql, qr, kv, count, width, j->rank, j->scale2);
      online_softmax(j->isa, &m[h], &l[h], o + h * j->rank, s, count, j->rank);
      if (j->bf16_weights)
        for (int64_t p = 0; p < count; p++) s[p] = mk_bf16_to_f32(mk_f32_to_bf16(s[p]));
      j->isa->mla_accumulate(o + h * j->rank, s, kv, count, width, j->rank);
    }
  }
}

static void mla_range(void *raw, int64_t begin, int64_t end) {
  const mla_job *j = raw;
  int64_t width = j->rank + j->rope;
  float *scratch = malloc(sizeof(float) * (size_t)(BLOCK * width + (j->heads + 4) * BLOCK)); /* a block, its scores */
  tile_scratch sc = {0};
  if (j->q16 != NULL) {
    int64_t tiles = (j->heads / j->groups + TILE_HEADS) / TILE_HEADS; /* a unit's tiles, at most */
    sc.qt = aligned_alloc(64, sizeof(uint32_t) * (size_t)(tiles * 64 * ((width + 7) / 8)));
    sc.m = malloc(sizeof(int32_t) * (size_t)(tiles * TILE_HEADS));
    sc.l = malloc(sizeof(float) * (size_t)(tiles * TILE_HEADS));
    sc.orow = malloc(sizeof(float *) * (size_t)(tiles * TILE_HEADS));
    sc.copy = aligned_alloc(64, sizeof(uint16_t) * (size_t)(2 * RUN * width + 32));
    sc.spare = aligned_alloc(64, sizeof(float) * (size_t)(j->rank + 16));
    sc.lines = malloc(sizeof(char *) * (size_t)(2 * RUN * ((width * 2 + 63) / 64 + 1)));
  }
  if (scratch == NULL || (j->q16 != NULL && (sc.qt == NULL || sc.m == NULL || sc.l == NULL || sc.orow == NULL || sc.copy == NULL ||
                                               sc.spare == NULL || sc.lines == NULL)))
    mk_part_nomem(), end = begin;
  for (int64_t unit = begin; unit < end; unit++)
    mla_item(j, unit, unit + 1 < end ? unit + 1 : -1, scratch, scratch + BLOCK * width, &sc);
  free(scratch), free(sc.qt), free(sc.m), free(sc.l), free(sc.orow), free(sc.copy), free(sc.spare), free(sc.lines);
}

/* Combines a row's chunk partials in chunk order and writes out = o / l. */
static void mla_combine(const mla_job *j, int64_t t, float *out, int64_t ldo) {
  int64_t chunks = row_chunks(j->context_lens[t]);
  for (int64_t h = 0; h < j->heads; h++) {
    int32_t m = MK_MLA_M_NONE;
    for (int64_t c = 0; c < chunks; c++) {
      int32_t mc = j->part_m[(t * j->chunks_per_row + c) * j->heads + h];
      if (mc > m) m = mc;
    }
    float *dst = out + (t * j->heads + h) * ldo, l = 0;
    memset(dst, 0, sizeof(float) * (size_t)j->rank);
    for (int64_t c = 0; c < chunks; c++) {
      int64_t item = t * j->chunks_per_row + c;
      int64_t delta = (int64_t)m - j->part_m[item * j->heads + h];
      int32_t d = delta > 255 ? 255 : (int32_t)delta;
      float *o = j->part_o + (item * j->heads + h) * j->rank, lc = j->part_l[item * j->heads + h];
      for (int64_t c = 0; c < j->rank; c++) o[c] = mk_scale_down_pow2(o[c], d);
      lc = mk_scale_down_pow2(lc, d);
      l += lc;
      j->isa->axpy(dst, 1.0f, o, j->rank);
    }
    for (int64_t c = 0; c < j->rank; c++) dst[c] = dst[c] / l;
  }
}

typedef struct {
  const mla_job *j;
  float *out;
  int64_t ldo;
} combine_job;

static void combine_range(void *raw, int64_t begin, int64_t end) {
  const combine_job *c = raw;
  for (int64_t t = begin; t < end; t++) mla_combine(c->j, t, c->out, c->ldo);
}

MK_EXPORT int32_t mk_mla_decode(mk_context *ctx, float *out, int64_t ldo, const void *q_latent, int64_t ldq,
                                const void *q_rope, int64_t ldr, int32_t q_dtype, int64_t nq, int64_t heads, int64_t rank,
                                int64_t rope, const void *pages, int32_t pages_dtype, int64_t num_pages,
                                int64_t page_size, const int32_t *block_table, int64_t ldb, int64_t max_pages,
                                const int32_t *context_lens, float softmax_scale) {
  if (ctx == NULL || out == NULL || q_latent == NULL || q_rope == NULL || pages == NULL || block_table == NULL ||
      context_lens == NULL)
    return MK_E_NULL;
  if (nq < 0 || heads < 1 || rank < 1 || rope < 0 || page_size < 1 || num_pages < 0 || max_pages < 0 ||
      ldo < rank || ldq < rank || ldr < rope || ldb < max_pages)
    return MK_E_SHAPE;
  if (pages_dtype != MK_BF16 && pages_dtype != MK_F32) return MK_E_DTYPE;
  if (q_dtype != MK_F32 && !(q_dtype == MK_BF16 && pages_dtype == MK_BF16)) return MK_E_DTYPE;
  int64_t longest = 0;
  for (int64_t t = 0; t < nq; t++) {
    int64_t len = context_lens[t];
    if (len < 1 || len > max_pages * page_size) return MK_E_INDEX;
    for (int64_t p = 0; p < (len + page_size - 1) / page_size; p++)
      if (block_table[t * ldb + p] < 0 || block_table[t * ldb + p] >= num_pages) return MK_E_INDEX;
    if (len > longest) longest = len;
  }
  int64_t chunks_per_row = row_chunks(longest), items = nq * chunks_per_row, width = rank + rope;
  mla_job j = {.isa = ctx->isa, .q_latent = q_latent, .q_rope = q_rope, .ldq = ldq, .ldr = ldr, .heads = heads,
               .rank = rank, .rope = rope, .pages = pages, .pages_bf16 = pages_dtype == MK_BF16, .page_size = page_size,
               .num_pages = num_pages, .block_table = block_table, .ldb = ldb, .context_lens = context_lens,
               .scale2 = softmax_scale * LOG2E, .chunks_per_row = chunks_per_row, .items = items, .groups = 1};
  int tiled = q_dtype == MK_BF16 && ctx->isa->mla_tile_bf16 != NULL;
  if (items < (int64_t)ctx->threads * ITEMS_PER_THREAD) /* the tile kernel's groups are its tiles */
    j.groups = tiled                                  ? (heads + TILE_HEADS - 1) / TILE_HEADS
               : ctx->isa->mla_scores_heads != NULL ? (heads + MK_MLA_HEADS - 1) / MK_MLA_HEADS
               : heads < HEAD_GROUPS                ? heads
                                                    : HEAD_GROUPS;
  /* A BF16 query is gathered into rows of q_latent ‖ q_rope for the BF16 row kernels, or widened to F32 (exactly)
   * for the F32 ones. */
  uint16_t *q16 = NULL;
  float *q_wide = NULL;
  if (q_dtype == MK_BF16) {
    const uint16_t *ql = q_latent, *qr = q_rope;
    if (tiled) q16 = malloc(sizeof(uint16_t) * (size_t)(nq * heads * width));
    else q_wide = malloc(sizeof(float) * (size_t)(nq * heads * width));
    if (q16 == NULL && q_wide == NULL) return MK_E_NOMEM;
    for (int64_t r = 0; r < nq * heads; r++)
      for (int64_t c = 0; c < width; c++) {
        uint16_t b = c < rank ? ql[r * ldq + c] : qr[r * ldr + c - rank];
        if (tiled) q16[r * width + c] = b;
        else q_wide[r * width + c] = mk_bf16_to_f32(b);
      }
    j.q16 = q16, j.bf16_weights = 1;
    if (q_wide != NULL) j.q_latent = q_wide, j.q_rope = q_wide + rank, j.ldq = width, j.ldr = width;
  }
  j.part_m = malloc(sizeof(int32_t) * (size_t)(items * heads));
  j.part_l = malloc(sizeof(float) * (size_t)(items * heads));
  j.part_o = malloc(sizeof(float) * (size_t)(items * heads * rank));
  if (j.part_m == NULL || j.part_l == NULL || j.part_o == NULL) {
    free(j.part_m), free(j.part_l), free(j.part_o), free(q16), free(q_wide);
    return MK_E_NOMEM;
  }
  int32_t rc = mk_parallel_for(ctx, items * j.groups, 1, items * CHUNK * (rank + rope) * heads, mla_range, &j);
  combine_job combine = {&j, out, ldo}; /* rows combine independently: on every thread (serial, it was ~5% at batch 32) */
  if (rc == MK_OK) rc = mk_parallel_for(ctx, nq, 1, items * heads * rank * 4, combine_range, &combine);
  free(j.part_m), free(j.part_l), free(j.part_o), free(q16), free(q_wide);
  return rc;
}
