/* AVX2 row kernels of attention (mk_isa_avx2's): MLA decode's F32 ops, one head or a tile of heads at a time, and
 * the prompt attention's softmax and value sums. mla.c and attention.c walk the heads, rows and blocks. */
#include "mk_internal.h"

#include <immintrin.h>
#include <math.h>

#include "avx2_math.h"

#define INLINE static inline __attribute__((always_inline))

/* o += Σ_p prob[p] · c_kv[p]: each 32-wide slice of o is loaded and stored once for the whole block. */
void mk_avx2_mla_accumulate(float *o, const float *prob, const float *kv, int64_t count, int64_t width, int64_t rank) {
  for (int64_t c = 0; c < rank; c += 32) {
    __m256 o0 = load8(o + c, rank - c), o1 = load8(o + c + 8, rank - c - 8), o2 = load8(o + c + 16, rank - c - 16),
           o3 = load8(o + c + 24, rank - c - 24);
    for (int64_t p = 0; p < count; p++) {
      const float *row = kv + p * width + c;
      __m256 w = _mm256_set1_ps(prob[p]);
      o0 = _mm256_fmadd_ps(w, load8(row, rank - c), o0);
      o1 = _mm256_fmadd_ps(w, load8(row + 8, rank - c - 8), o1);
      o2 = _mm256_fmadd_ps(w, load8(row + 16, rank - c - 16), o2);
      o3 = _mm256_fmadd_ps(w, load8(row + 24, rank - c - 24), o3);
    }
    store8(o + c, o0, rank - c), store8(o + c + 8, o1, rank - c - 8);
    store8(o + c + 16, o2, rank - c - 16), store8(o + c + 24, o3, rank - c - 24);
  }
}

/* ---- MLA decode on F32 rows (mla.c converts each block of latent rows once for all heads) ----
 * Scores of positions p, p + 1 (two when `two`) for H <= 4 heads (head h's query rows at ql + h·ldq, qr + h·ldr, its
 * scores at s + h·lds): each latent chunk and each query chunk loaded once for the 2 x H products, in named
 * accumulators. Each (position, head) is one chain, c_kv against q_latent then k_pe against q_rope in 8-column steps,
 * and one hsum8: the same bits whichever positions and heads share a call. */
INLINE void scores_2xh(float *s, int64_t lds, const float *ql, int64_t ldq, const float *qr, int64_t ldr,
                       const float *row0, const float *row1, int two, int64_t rank, int64_t rope, float scale, const int H) {
  __m256 z = _mm256_setzero_ps(), a00 = z, a01 = z, a02 = z, a03 = z, a10 = z, a11 = z, a12 = z, a13 = z;
#define HEAD(h, Q)                                                                                           \
  if (H > h) {                                                                                               \
    __m256 qv = Q;                                                                                           \
    a0##h = _mm256_fmadd_ps(qv, k0, a0##h), a1##h = _mm256_fmadd_ps(qv, k1, a1##h);                          \
  }
  for (int part = 0; part < 2; part++) { /* c_kv against q_latent, then k_pe against q_rope */
    const float *q = part == 0 ? ql : qr, *r0 = part == 0 ? row0 : row0 + rank, *r1 = part == 0 ? row1 : row1 + rank;
    int64_t ld = part == 0 ? ldq : ldr, len = part == 0 ? rank : rope, c = 0;
    for (; c + 8 <= len; c += 8) {
      __m256 k0 = _mm256_loadu_ps(r0 + c), k1 = two ? _mm256_loadu_ps(r1 + c) : k0;
      HEAD(0, _mm256_loadu_ps(q + c)) HEAD(1, _mm256_loadu_ps(q + ld + c))
      HEAD(2, _mm256_loadu_ps(q + 2 * ld + c)) HEAD(3, _mm256_loadu_ps(q + 3 * ld + c))
    }
    if (c < len) {
      __m256 k0 = load8(r0 + c, len - c), k1 = two ? load8(r1 + c, len - c) : k0;
      HEAD(0, load8(q + c, len - c)) HEAD(1, load8(q + ld + c, len - c))
      HEAD(2, load8(q + 2 * ld + c, len - c)) HEAD(3, load8(q + 3 * ld + c, len - c))
    }
  }
#undef HEAD
#define OUT(h)                                                                                               \
  if (H > h) {                                                                                               \
    s[h * lds] = hsum8(a0##h) * scale;                                                                       \
    if (two) s[h * lds + 1] = hsum8(a1##h) * scale;                                                          \
  }
  OUT(0) OUT(1) OUT(2) OUT(3)
#undef OUT
}

INLINE void scores_heads(float *s, int64_t lds, const float *ql, int64_t ldq, const float *qr, int64_t ldr,
                         const float *kv, int64_t count, int64_t width, int64_t rank, float scale, const int H) {
  for (int64_t p = 0; p < count; p += 2)
    scores_2xh(s + p, lds, ql, ldq, qr, ldr, kv + p * width, kv + (p + 1) * width, count - p > 1, rank, width - rank, scale, H);
}

/* mla_scores is mla_scores_heads for one head: the same chain per (position, head). */
void mk_avx2_mla_scores(float *s, const float *ql, const float *qr, const float *kv, int64_t count, int64_t width,
                       int64_t rank, float scale) {
  scores_heads(s, 0, ql, 0, qr, 0, kv, count, width, rank, scale, 1);
}

void mk_avx2_mla_scores_heads(float *s, int64_t lds, const float *ql, int64_t ldq, const float *qr, int64_t ldr, int64_t hn,
                             const float *kv, int64_t count, int64_t width, int64_t rank, float scale) {
  for (int64_t h = 0; h < hn; h += 4) {
    float *sh = s + h * lds;
    const float *qlh = ql + h * ldq, *qrh = qr + h * ldr;
    switch (hn - h) {
      case 1: scores_heads(sh, lds, qlh, ldq, qrh, ldr, kv, count, width, rank, scale, 1); break;
      case 2: scores_heads(sh, lds, qlh, ldq, qrh, ldr, kv, count, width, rank, scale, 2); break;
      case 3: scores_heads(sh, lds, qlh, ldq, qrh, ldr, kv, count, width, rank, scale, 3); break;
      default: scores_heads(sh, lds, qlh, ldq, qrh, ldr, kv, count, width, rank, scale, 4); break;
    }
  }
}

/* mla_accumulate for HN (<= 4) heads at once (head h's output row at o + h·ldo, its weights at prob + h·ldp): 16
 * columns of the HN heads in registers, each value chunk loaded once for them; each output the chain of mla_accumulate. */
INLINE void accumulate_heads(float *o, int64_t ldo, const float *prob, int64_t ldp, const float *kv, int64_t count,
                             int64_t width, int64_t rank, const int HN) {
  for (int64_t c = 0; c < rank; c += 16) {
    int64_t n0 = rank - c, n1 = rank - c - 8;
    __m256 a[4][2];
    for (int h = 0; h < HN; h++) a[h][0] = load8(o + h * ldo + c, n0), a[h][1] = load8(o + h * ldo + c + 8, n1);
    for (int64_t p = 0; p < count; p++) {
      const float *row = kv + p * width + c;
      __m256 v0 = load8(row, n0), v1 = load8(row + 8, n1);
      for (int h = 0; h < HN; h++) {
        __m256 w = _mm256_broadcast_ss(prob + h * ldp + p);
        a[h][0] = _mm256_fmadd_ps(w, v0, a[h][0]), a[h][1] = _mm256_fmadd_ps(w, v1, a[h][1]);
      }
    }
    for (int h = 0; h < HN; h++) {
      store8(o + h * ldo + c, a[h][0], n0);
      if (n1 > 0) store8(o + h * ldo + c + 8, a[h][1], n1);
    }
  }
}

void mk_avx2_mla_accumulate_heads(float *o, int64_t ldo, const float *prob, int64_t ldp, int64_t hn, const float *kv,
                                 int64_t count, int64_t width, int64_t rank) {
  for (int64_t h = 0; h < hn; h += 4) {
    float *oh = o + h * ldo;
    const float *ph = prob + h * ldp;
    switch (hn - h) {
      case 1: accumulate_heads(oh, ldo, ph, ldp, kv, count, width, rank, 1); break;
      case 2: accumulate_heads(oh, ldo, ph, ldp, kv, count, width, rank, 2); break;
      case 3: accumulate_heads(oh, ldo, ph, ldp, kv, count, width, rank, 3); break;
      default: accumulate_heads(oh, ldo, ph, ldp, kv, count, width, rank, 4); break;
    }
  }
}

float mk_avx2_exp2_sum(float *s, int64_t count, float m) {
  __m256 mv = _mm256_set1_ps(m), w0 = exp2_ps(_mm256_sub_ps(load8(s, count), mv));
  __m256 w1 = exp2_ps(_mm256_sub_ps(load8(s + 8, count - 8), mv));
  w0 = _mm256_and_ps(w0, _mm256_castsi256_ps(mask8(count)));
  w1 = _mm256_and_ps(w1, _mm256_castsi256_ps(mask8(count - 8)));
  store8(s, w0, count);
  if (count > 8) store8(s + 8, w1, count - 8);
  return hsum8(_mm256_add_ps(w0, w1));
}

/* ---- the prompt attention's row kernels ----
 * s = softmax(s · scale): the max of the scaled scores, e^(s - max) by exp_ps, their sum in 8 lanes (hsum8's tree),
 * then each weight divided by it. */
void mk_avx2_softmax(float *s, int64_t n, float scale) {
  __m256 sc = _mm256_set1_ps(scale), top = _mm256_set1_ps(-INFINITY);
  for (int64_t j = 0; j < n; j += 8) {
    __m256 v = _mm256_mul_ps(load8(s + j, n - j), sc);
    store8(s + j, v, n - j);
    top = _mm256_max_ps(top, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), v, _mm256_castsi256_ps(mask8(n - j))));
  }
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(top), _mm256_extractf128_ps(top, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  __m256 max = _mm256_set1_ps(_mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)))), sum = _mm256_setzero_ps();
  for (int64_t j = 0; j < n; j += 8) {
    __m256 e = exp_ps(_mm256_sub_ps(load8(s + j, n - j), max));
    e = _mm256_and_ps(e, _mm256_castsi256_ps(mask8(n - j)));
    store8(s + j, e, n - j);
    sum = _mm256_add_ps(sum, e);
  }
  __m256 total = _mm256_set1_ps(hsum8(sum));
  for (int64_t j = 0; j < n; j += 8) store8(s + j, _mm256_div_ps(load8(s + j, n - j), total), n - j);
}

/* MR rows' outputs over the 16 columns at c, positions [from, to): the positions all MR rows see with 2 values loaded
 * once for MR rows, then each row's own last positions. Either way acc += w_r[p] · v_p[c + 8z] in position order
 * (fused multiply-adds), started at zero when from is 0, else at what o holds. Named accumulators: as an array, GCC
 * stored them to the stack every position (6x slower). */
INLINE void rows_chunk(float *o, int64_t ldo, const float *w, int64_t ldw, const float *v, int64_t ldv, const int MR,
                       const int64_t *counts, int64_t c, int64_t d, int64_t from, int64_t to) {
  int64_t n0 = d - c, n1 = d - c - 8, common = to;
  for (int r = 0; r < MR; r++) common = counts[r] < common ? counts[r] : common;
  if (common < from) common = from;
#define LOAD(r)                                                                                              \
  __m256 a##r##0 = _mm256_setzero_ps(), a##r##1 = a##r##0;                                                   \
  if (r < MR && from > 0) a##r##0 = load8(o + r * ldo + c, n0), a##r##1 = load8(o + r * ldo + c + 8, n1);
  LOAD(0) LOAD(1) LOAD(2) LOAD(3)
#undef LOAD
#define ROW(r)                                                                                               \
  if (r < MR) {                                                                                              \
    __m256 wr = _mm256_broadcast_ss(w + r * ldw + p);                                                        \
    a##r##0 = _mm256_fmadd_ps(wr, v0, a##r##0), a##r##1 = _mm256_fmadd_ps(wr, v1, a##r##1);                  \
  }
  if (n1 >= 8) /* whole 16-column chunks without masks */
    for (int64_t p = from; p < common; p++) {
      const float *vp = v + p * ldv + c;
      __m256 v0 = _mm256_loadu_ps(vp), v1 = _mm256_loadu_ps(vp + 8);
      ROW(0) ROW(1) ROW(2) ROW(3)
    }
  else
    for (int64_t p = from; p < common; p++) {
      const float *vp = v + p * ldv + c;
      __m256 v0 = load8(vp, n0), v1 = load8(vp + 8, n1);
      ROW(0) ROW(1) ROW(2) ROW(3)
    }
#undef ROW
#define TAIL(r)                                                                                              \
  if (r < MR) {                                                                                              \
    int64_t end = counts[r] < to ? counts[r] : to;                                                           \
    for (int64_t p = common; p < end; p++) {                                                                 \
      const float *vp = v + p * ldv + c;                                                                     \
      __m256 wr = _mm256_broadcast_ss(w + r * ldw + p);                                                      \
      a##r##0 = _mm256_fmadd_ps(wr, load8(vp, n0), a##r##0), a##r##1 = _mm256_fmadd_ps(wr, load8(vp + 8, n1), a##r##1); \
    }                                                                                                        \
    store8(o + r * ldo + c, a##r##0, n0);                                                                    \
    if (n1 > 0) store8(o + r * ldo + c + 8, a##r##1, n1);                                                    \
  }
  TAIL(0) TAIL(1) TAIL(2) TAIL(3)
#undef TAIL
}

void mk_avx2_weighted_rows(float *o, int64_t ldo, const float *w, int64_t ldw, const float *v, int64_t ldv, int64_t mr,
                          const int64_t *counts, int64_t d, int64_t from, int64_t to) {
  for (int64_t c = 0; c < d; c += 16) switch (mr) {
      case 4: rows_chunk(o, ldo, w, ldw, v, ldv, 4, counts, c, d, from, to); break;
      case 3: rows_chunk(o, ldo, w, ldw, v, ldv, 3, counts, c, d, from, to); break;
      case 2: rows_chunk(o, ldo, w, ldw, v, ldv, 2, counts, c, d, from, to); break;
      default:
        for (int64_t r = 0; r < mr; r++) rows_chunk(o + r * ldo, ldo, w + r * ldw, ldw, v, ldv, 1, counts + r, c, d, from, to);
    }
}
