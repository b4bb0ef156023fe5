/* AVX512-BF16 tiles of the BF16 x BF16 matmul: VDPBF16PS multiplies 32 BF16 pairs per instruction, each
 * product exact, and adds them into 16 F32 lanes (round to nearest even; BF16 subnormal inputs and F32
 * subnormal results are flushed to zero, whatever MXCSR says). Only this file is compiled with
 * -mavx512bf16: a context whose CPU lacks it never calls in here (context.c), and no other AVX-512 kernel
 * can pick up a BF16 instruction by accident.
 *
 * Reduction order of out[t][o], the same in every tile shape: one 16-lane F32 accumulator, started at +0;
 * for each full 32-element chunk of k one VDPBF16PS (lane i takes elements 2i and 2i+1 of the chunk); the
 * tail (k mod 32) as one more VDPBF16PS on masked loads (the zeros add +0); then one fixed-tree horizontal
 * sum (hsum16, or hsum16x16 for a whole 4 x 4 tile: the same tree, avx512_sums.h). A tile of MR x NR only runs MR·NR such chains side by side, so a row's bits are the same in
 * the GEMV (n < 4) or the GEMM tiles, first or last tile, on one thread or many. */
#include "mk_internal.h"

#include <immintrin.h>

#include "avx512_sums.h"

#define INLINE static inline __attribute__((always_inline))

INLINE __mmask32 mask32(int64_t remaining) {
  return remaining >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << remaining) - 1);
}

/* acc[i] += x[2i]·w[2i] + x[2i+1]·w[2i+1] (VDPBF16PS). The intrinsic, not inline assembly as for dpbusd in
 * avx512_kernels.c: here GCC 12 ties the accumulator itself, and an asm statement made it move accumulators
 * between registers inside the GEMM loop. */
INLINE __m512 dpbf16(__m512 acc, __m512i x, __m512i w) {
  return _mm512_dpbf16_ps(acc, (__m512bh)x, (__m512bh)w);
}

/* out[t*ldo + o] = dot(x row t, w row o) for t < MR, o < NR: each weight chunk loaded once per tile and
 * used by MR rows; each activation chunk by NR weight rows. Full chunks with plain loads, then the masked tail
 * (no mask in the hot loop). */
INLINE void tile_bf16(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w, int64_t ldw,
                      const int MR, const int NR, int64_t k) {
  __m512 acc[4][4];
  for (int t = 0; t < MR; t++)
    for (int o = 0; o < NR; o++) acc[t][o] = _mm512_setzero_ps();
#define BF16_STEP(LOAD)                                                                                      \
  do {                                                                                                       \
    __m512i xv[4];                                                                                           \
    for (int t = 0; t < MR; t++) xv[t] = LOAD(x + t * ldx + j);                                              \
    if (NR == 1) __builtin_prefetch((const char *)(w + j) + MK_STREAM_AHEAD, 0, 3);                          \
    for (int o = 0; o < NR; o++) {                                                                           \
      __m512i wv = LOAD(w + o * ldw + j);                                                                    \
      for (int t = 0; t < MR; t++) acc[t][o] = dpbf16(acc[t][o], xv[t], wv);                                 \
    }                                                                                                        \
  } while (0)
#define FULL(p) _mm512_loadu_si512(p)
#define TAIL(p) _mm512_maskz_loadu_epi16(tail, p)
  int64_t j = 0;
  for (; j + 32 <= k; j += 32) BF16_STEP(FULL);
  if (j < k) {
    __mmask32 tail = mask32(k - j);
    BF16_STEP(TAIL);
  }
#undef TAIL
#undef FULL
#undef BF16_STEP
  for (int t = 0; t < MR; t++)
    for (int o = 0; o < NR; o++) out[t * ldo + o] = hsum16(acc[t][o]);
}

/* The GEMM tile, 4 activation rows x 4 weight rows: per 32-element chunk 4 + 4 loads feed 16 VDPBF16PS. The same
 * chains as tile_bf16(4, 4), with 16 named accumulators: GCC moved an array of them through spare registers
 * every step. */
static void gemm_bf16_4x4(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w, int64_t ldw,
                          int64_t k) {
#define Z(t, o) __m512 c##t##o = _mm512_setzero_ps();
#define ROW(t) Z(t, 0) Z(t, 1) Z(t, 2) Z(t, 3)
  ROW(0) ROW(1) ROW(2) ROW(3)
#undef ROW
#undef Z
#define DOT(o, LOAD)                                                                                         \
  do {                                                                                                       \
    __m512i wv = LOAD(w + o * ldw + j);                                                                      \
    c0##o = dpbf16(c0##o, x0, wv);                                                                           \
    c1##o = dpbf16(c1##o, x1, wv);                                                                           \
    c2##o = dpbf16(c2##o, x2, wv);                                                                           \
    c3##o = dpbf16(c3##o, x3, wv);                                                                           \
  } while (0)
#define STEP(LOAD)                                                                                           \
  do {                                                                                                       \
    __m512i x0 = LOAD(x + j), x1 = LOAD(x + ldx + j), x2 = LOAD(x + 2 * ldx + j), x3 = LOAD(x + 3 * ldx + j); \
    DOT(0, LOAD); DOT(1, LOAD); DOT(2, LOAD); DOT(3, LOAD);                                                  \
  } while (0)
#define FULL(p) _mm512_loadu_si512(p)
#define TAIL(p) _mm512_maskz_loadu_epi16(tail, p)
  int64_t j = 0;
  for (; j + 32 <= k; j += 32) STEP(FULL);
  if (j < k) {
    __mmask32 tail = mask32(k - j);
    STEP(TAIL);
  }
#undef TAIL
#undef FULL
#undef STEP
#undef DOT
  __m512 sums = hsum16x16(c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33);
  _mm_storeu_ps(out, _mm512_extractf32x4_ps(sums, 0));
  _mm_storeu_ps(out + ldo, _mm512_extractf32x4_ps(sums, 1));
  _mm_storeu_ps(out + 2 * ldo, _mm512_extractf32x4_ps(sums, 2));
  _mm_storeu_ps(out + 3 * ldo, _mm512_extractf32x4_ps(sums, 3));
}

/* mk_isa.matmul_bf16_tile of the AVX-512 table (declared in mk_internal.h). Every shape up to 4 x 4 gets its own
 * unrolled tile: (4, 4) is the GEMM tile, (n, 1) for n < 4 the GEMV's one-weight-row stream, the rest edges. */
void mk_avx512_matmul_bf16_tile(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w,
                             int64_t ldw, int64_t mr, int64_t nr, int64_t k) {
#define SHAPE(M, N) \
  case (M) * 8 + (N): tile_bf16(out, ldo, x, ldx, w, ldw, M, N, k); return;
#define ROW(M) SHAPE(M, 1) SHAPE(M, 2) SHAPE(M, 3) SHAPE(M, 4)
  switch (mr * 8 + nr) {
    case 4 * 8 + 4: gemm_bf16_4x4(out, ldo, x, ldx, w, ldw, k); return;
    ROW(1) ROW(2) ROW(3) SHAPE(4, 1) SHAPE(4, 2) SHAPE(4, 3)
    default: /* larger tiles are split into 4 x 4 pieces: the same chains */
      for (int64_t t = 0; t < mr; t += 4)
        for (int64_t o = 0; o < nr; o += 4)
          mk_avx512_matmul_bf16_tile(out + t * ldo + o, ldo, x + t * ldx, ldx, w + o * ldw, ldw,
                                     mr - t < 4 ? mr - t : 4, nr - o < 4 ? nr - o : 4, k);
  }
#undef ROW
#undef SHAPE
}

/* ---- MLA decode on BF16 latent rows: 4 heads x 4 positions per register tile ---- */

/* Scores of up to 4 heads against up to 4 rows at a time: each 32-value chunk of a row is loaded once for 4
 * heads and each chunk of q once for 4 rows (16 VDPBF16PS chains in named registers: as an array, GCC spilled
 * them inside the loop), so the loop is bound by the dot products, not the loads. Full chunks with plain loads,
 * then the masked tail. Missing heads or rows of an edge tile reuse the first one; their sums are not stored. */
#define MLA_SCORES_STEP(LOAD)                                                                                 \
  do {                                                                                                        \
    __m512i k0 = LOAD(r0 + c), k1 = LOAD(r1 + c), k2 = LOAD(r2 + c), k3 = LOAD(r3 + c), qv = LOAD(q0 + c);   \
    a00 = dpbf16(a00, qv, k0), a01 = dpbf16(a01, qv, k1), a02 = dpbf16(a02, qv, k2), a03 = dpbf16(a03, qv, k3); \
    qv = LOAD(q1 + c);                                                                                        \
    a10 = dpbf16(a10, qv, k0), a11 = dpbf16(a11, qv, k1), a12 = dpbf16(a12, qv, k2), a13 = dpbf16(a13, qv, k3); \
    qv = LOAD(q2 + c);                                                                                        \
    a20 = dpbf16(a20, qv, k0), a21 = dpbf16(a21, qv, k1), a22 = dpbf16(a22, qv, k2), a23 = dpbf16(a23, qv, k3); \
    qv = LOAD(q3 + c);                                                                                        \
    a30 = dpbf16(a30, qv, k0), a31 = dpbf16(a31, qv, k1), a32 = dpbf16(a32, qv, k2), a33 = dpbf16(a33, qv, k3); \
  } while (0)
#define LOAD_FULL(p) _mm512_loadu_si512(p)
#define LOAD_TAIL(p) _mm512_maskz_loadu_epi16(tail, p)

void mk_avx512_mla_scores_bf16(float *s, int64_t lds, const uint16_t *q, int64_t ldq, int64_t hn,
                               const uint16_t *const *rows, int64_t count, int64_t width, float scale) {
  const uint16_t *q0 = q, *q1 = q + (hn > 1 ? 1 : 0) * ldq, *q2 = q + (hn > 2 ? 2 : 0) * ldq, *q3 = q + (hn > 3 ? 3 : 0) * ldq;
  int64_t full = width / 32 * 32;
  __mmask32 tail = mask32(width - full);
  for (int64_t p0 = 0; p0 < count; p0 += 4) {
    const uint16_t *r0 = rows[p0], *r1 = rows[p0 + 1 < count ? p0 + 1 : p0], *r2 = rows[p0 + 2 < count ? p0 + 2 : p0],
                   *r3 = rows[p0 + 3 < count ? p0 + 3 : p0];
    __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00, a13 = a00,
           a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00, a32 = a00, a33 = a00;
    int64_t c = 0;
    for (; c < full; c += 32) MLA_SCORES_STEP(LOAD_FULL);
    if (c < width) MLA_SCORES_STEP(LOAD_TAIL);
    __m512 sums = _mm512_mul_ps(hsum16x16(a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23, a30, a31, a32, a33),
                                _mm512_set1_ps(scale));
    /* head h's scores are lanes 4h..4h+3: stored at s + h·lds + p0 by a masked store of the whole register from
     * 4h floats before it (lds ≥ 4, so that address lies inside s) */
    __mmask16 rows = (__mmask16)((1u << (count - p0 < 4 ? count - p0 : 4)) - 1);
    _mm512_mask_storeu_ps(s + p0, rows, sums);
    if (hn > 1) _mm512_mask_storeu_ps(s + lds + p0 - 4, (__mmask16)(rows << 4), sums);
    if (hn > 2) _mm512_mask_storeu_ps(s + 2 * lds + p0 - 8, (__mmask16)(rows << 8), sums);
    if (hn > 3) _mm512_mask_storeu_ps(s + 3 * lds + p0 - 12, (__mmask16)(rows << 12), sums);
  }
}
#undef MLA_SCORES_STEP
#undef LOAD_FULL
#undef LOAD_TAIL

/* A BF16 row chunk widened to F32 (exact: BF16 is the top half of an F32). */
INLINE __m512 load_bf16_as_f32(const uint16_t *p, __mmask16 m) {
  __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

/* o += Σ_p prob[p] · c_kv[p] for up to 4 heads: 64 columns of o for 4 heads live in 16 named registers while
 * every row of the block goes by, so each row chunk is widened once for 4 heads. Fused multiply-adds in position
 * order. A missing head of an edge tile uses the first head's weights; its sums are not stored. */
void mk_avx512_mla_accumulate_bf16(float *o, int64_t ldo, const float *prob, int64_t ldp, int64_t hn,
                                   const uint16_t *const *rows, int64_t count, int64_t rank) {
  const float *p0 = prob, *p1 = prob + (hn > 1 ? 1 : 0) * ldp, *p2 = prob + (hn > 2 ? 2 : 0) * ldp, *p3 = prob + (hn > 3 ? 3 : 0) * ldp;
  for (int64_t c = 0; c < rank; c += 64) {
    __mmask16 m[4];
    for (int k = 0; k < 4; k++) {
      int64_t left = rank - c - 16 * k;
      m[k] = left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
    }
    float *o0 = o + c, *o1 = o + (hn > 1 ? 1 : 0) * ldo + c, *o2 = o + (hn > 2 ? 2 : 0) * ldo + c, *o3 = o + (hn > 3 ? 3 : 0) * ldo + c;
    __m512 a00 = _mm512_maskz_loadu_ps(m[0], o0), a01 = _mm512_maskz_loadu_ps(m[1], o0 + 16),
           a02 = _mm512_maskz_loadu_ps(m[2], o0 + 32), a03 = _mm512_maskz_loadu_ps(m[3], o0 + 48);
    __m512 a10 = _mm512_maskz_loadu_ps(m[0], o1), a11 = _mm512_maskz_loadu_ps(m[1], o1 + 16),
           a12 = _mm512_maskz_loadu_ps(m[2], o1 + 32), a13 = _mm512_maskz_loadu_ps(m[3], o1 + 48);
    __m512 a20 = _mm512_maskz_loadu_ps(m[0], o2), a21 = _mm512_maskz_loadu_ps(m[1], o2 + 16),
           a22 = _mm512_maskz_loadu_ps(m[2], o2 + 32), a23 = _mm512_maskz_loadu_ps(m[3], o2 + 48);
    __m512 a30 = _mm512_maskz_loadu_ps(m[0], o3), a31 = _mm512_maskz_loadu_ps(m[1], o3 + 16),
           a32 = _mm512_maskz_loadu_ps(m[2], o3 + 32), a33 = _mm512_maskz_loadu_ps(m[3], o3 + 48);
    for (int64_t p = 0; p < count; p++) {
      const uint16_t *row = rows[p] + c;
      __m512 k0 = load_bf16_as_f32(row, m[0]), k1 = load_bf16_as_f32(row + 16, m[1]), k2 = load_bf16_as_f32(row + 32, m[2]),
             k3 = load_bf16_as_f32(row + 48, m[3]);
      __m512 w = _mm512_set1_ps(p0[p]);
      a00 = _mm512_fmadd_ps(w, k0, a00), a01 = _mm512_fmadd_ps(w, k1, a01), a02 = _mm512_fmadd_ps(w, k2, a02), a03 = _mm512_fmadd_ps(w, k3, a03);
      w = _mm512_set1_ps(p1[p]);
      a10 = _mm512_fmadd_ps(w, k0, a10), a11 = _mm512_fmadd_ps(w, k1, a11), a12 = _mm512_fmadd_ps(w, k2, a12), a13 = _mm512_fmadd_ps(w, k3, a13);
      w = _mm512_set1_ps(p2[p]);
      a20 = _mm512_fmadd_ps(w, k0, a20), a21 = _mm512_fmadd_ps(w, k1, a21), a22 = _mm512_fmadd_ps(w, k2, a22), a23 = _mm512_fmadd_ps(w, k3, a23);
      w = _mm512_set1_ps(p3[p]);
      a30 = _mm512_fmadd_ps(w, k0, a30), a31 = _mm512_fmadd_ps(w, k1, a31), a32 = _mm512_fmadd_ps(w, k2, a32), a33 = _mm512_fmadd_ps(w, k3, a33);
    }
    /* stores from the last head down: a missing head aliases head 0, whose own sums must be written last */
    if (hn > 3) _mm512_mask_storeu_ps(o3, m[0], a30), _mm512_mask_storeu_ps(o3 + 16, m[1], a31), _mm512_mask_storeu_ps(o3 + 32, m[2], a32), _mm512_mask_storeu_ps(o3 + 48, m[3], a33);
    if (hn > 2) _mm512_mask_storeu_ps(o2, m[0], a20), _mm512_mask_storeu_ps(o2 + 16, m[1], a21), _mm512_mask_storeu_ps(o2 + 32, m[2], a22), _mm512_mask_storeu_ps(o2 + 48, m[3], a23);
    if (hn > 1) _mm512_mask_storeu_ps(o1, m[0], a10), _mm512_mask_storeu_ps(o1 + 16, m[1], a11), _mm512_mask_storeu_ps(o1 + 32, m[2], a12), _mm512_mask_storeu_ps(o1 + 48, m[3], a13);
    _mm512_mask_storeu_ps(o0, m[0], a00), _mm512_mask_storeu_ps(o0 + 16, m[1], a01), _mm512_mask_storeu_ps(o0 + 32, m[2], a02), _mm512_mask_storeu_ps(o0 + 48, m[3], a03);
  }
}
