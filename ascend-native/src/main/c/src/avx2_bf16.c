/* AVX2 tiles of the BF16 x BF16 matmuls. Without a BF16 dot-product instruction, 16 BF16 values of one 256-bit load
 * widen to F32 as their even elements (a shift) and their odd ones (a mask), and each product of two BF16 values is
 * exact in F32, so a fused multiply-add rounds exactly as the spec's multiply then add.
 *
 * Reduction order of out[t][o], the same in every tile shape: one 8-lane F32 accumulator started at +0; for each
 * 16-element chunk of k (the tail zero-padded) acc += xe · we, then acc += xo · wo; then hsum8's fixed tree. A tile of
 * MR x NR only runs MR·NR such chains side by side, so a row's bits are the same in the GEMV or the GEMM tiles. */
#include "mk_internal.h"

#include <immintrin.h>

#include "avx2_math.h"

#define INLINE static inline __attribute__((always_inline))

/* MR (<= 2) x NR (<= 3) chains: 6 accumulators, 4 widened activation registers and a weight row's two. */
INLINE void tile_bf16(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w, int64_t ldw,
                      const int MR, const int NR, int64_t k) {
  __m256 acc[2][3];
  for (int t = 0; t < MR; t++)
    for (int o = 0; o < NR; o++) acc[t][o] = _mm256_setzero_ps();
#define BF16_STEP(LOAD)                                                                                      \
  do {                                                                                                       \
    __m256 xe[2], xo[2];                                                                                     \
    for (int t = 0; t < MR; t++) {                                                                           \
      __m256i raw = LOAD(x + t * ldx + j);                                                                   \
      xe[t] = bf16_even(raw), xo[t] = bf16_odd(raw);                                                         \
    }                                                                                                        \
    if (NR == 1) __builtin_prefetch((const char *)(w + j) + MK_STREAM_AHEAD, 0, 3);                          \
    for (int o = 0; o < NR; o++) {                                                                           \
      __m256i raw = LOAD(w + o * ldw + j);                                                                   \
      __m256 we = bf16_even(raw), wo = bf16_odd(raw);                                                        \
      for (int t = 0; t < MR; t++) acc[t][o] = _mm256_fmadd_ps(xo[t], wo, _mm256_fmadd_ps(xe[t], we, acc[t][o])); \
    }                                                                                                        \
  } while (0)
#define FULL(p) _mm256_loadu_si256((const __m256i *)(p))
#define TAIL(p) load_bf16x16_raw(p, k - j)
  int64_t j = 0;
  for (; j + 16 <= k; j += 16) BF16_STEP(FULL);
  if (j < k) BF16_STEP(TAIL);
#undef TAIL
#undef FULL
#undef BF16_STEP
  for (int t = 0; t < MR; t++)
    for (int o = 0; o < NR; o++) out[t * ldo + o] = hsum8(acc[t][o]);
}

void mk_avx2_matmul_bf16_tile(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w, int64_t ldw,
                              int64_t mr, int64_t nr, int64_t k) {
  for (int64_t t = 0; t < mr; t += 2)
    for (int64_t o = 0; o < nr; o += 3) {
      float *ot = out + t * ldo + o;
      const uint16_t *xt = x + t * ldx, *wo = w + o * ldw;
      if (mr - t >= 2 && nr - o >= 3) tile_bf16(ot, ldo, xt, ldx, wo, ldw, 2, 3, k);
      else if (nr - o >= 3) tile_bf16(ot, ldo, xt, ldx, wo, ldw, 1, 3, k);
      else
        for (int64_t r = t; r < mr && r < t + 2; r++)
          for (int64_t c = o; c < nr; c++) tile_bf16(out + r * ldo + c, ldo, x + r * ldx, ldx, w + c * ldw, ldw, 1, 1, k);
    }
}

/* mk_isa.gemv_bf16_rows: 16 weight rows against one activation row, 4 rows' chains at a time (one chain is two
 * dependent multiply-adds a chunk: alone, its latency would hold a row's stream to a third of the bandwidth), each
 * row's stream prefetched ahead; every output is the chain tile_bf16 computes for it, summed by the same tree. */
void mk_avx2_gemv_bf16_rows(float *out, const uint16_t *x, const uint16_t *w, int64_t ldw, int64_t k) {
  for (int64_t o = 0; o < MK_BF16_GEMV_NR; o += 4) {
    const uint16_t *w0 = w + o * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
#define ROW(i, LOAD)                                                                                         \
  {                                                                                                          \
    __m256i raw = LOAD(w##i + j);                                                                            \
    a##i = _mm256_fmadd_ps(xo, bf16_odd(raw), _mm256_fmadd_ps(xe, bf16_even(raw), a##i));                    \
  }
#define STEP(LOAD)                                                                                           \
  {                                                                                                          \
    __m256i xr = LOAD(x + j);                                                                                \
    __m256 xe = bf16_even(xr), xo = bf16_odd(xr);                                                            \
    ROW(0, LOAD) ROW(1, LOAD) ROW(2, LOAD) ROW(3, LOAD)                                                      \
  }
#define FULL(p) _mm256_loadu_si256((const __m256i *)(p))
#define TAIL(p) load_bf16x16_raw(p, k - j)
    int64_t j = 0;
    for (; j + 16 <= k; j += 16) {
      if ((j & 31) == 0) prefetch_rows4(w0 + j, w1 + j, w2 + j, w3 + j);
      STEP(FULL)
    }
    if (j < k) STEP(TAIL)
#undef TAIL
#undef FULL
#undef STEP
#undef ROW
    _mm_storeu_ps(out + o, hsum8x4(a0, a1, a2, a3));
  }
}

/* ---- matmul_heads_km on BF16: outputs across the lanes, k in column order ----
 * out[t][o] = Σ_c x[t][c] · w[c][o] with c in order, each product exact and added by one fused multiply-add: the bits
 * of the F32 unit in ops_linear.c, from pairs wt[j * 32 + o] = (w[2j][o], w[2j + 1][o]) whose 8 lanes widen by a shift
 * (row 2j) and a mask (row 2j + 1). Two tokens at a time share each widened pair. */
INLINE void heads_km_tokens(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, int64_t m, int64_t k,
                            const uint32_t *wt, const int TOKENS) {
  __m256 acc[2][4];
  for (int t = 0; t < TOKENS; t++)
    for (int g = 0; g < 4; g++) acc[t][g] = _mm256_setzero_ps();
  int64_t pairs = k / 2;
  for (int64_t j = 0; j < pairs; j++) {
    __m256 x0[2], x1[2];
    for (int t = 0; t < TOKENS; t++) {
      x0[t] = _mm256_set1_ps(mk_bf16_to_f32(x[t * ldx + 2 * j]));
      x1[t] = _mm256_set1_ps(mk_bf16_to_f32(x[t * ldx + 2 * j + 1]));
    }
    for (int g = 0; g < 4; g++) {
      __m256i raw = _mm256_loadu_si256((const __m256i *)(wt + j * 32 + 8 * g));
      __m256 we = bf16_even(raw), wo = bf16_odd(raw);
      for (int t = 0; t < TOKENS; t++) acc[t][g] = _mm256_fmadd_ps(x1[t], wo, _mm256_fmadd_ps(x0[t], we, acc[t][g]));
    }
  }
  if (k % 2) { /* the last column has no partner: its pair's high half is padding, and x has no element there */
    for (int t = 0; t < TOKENS; t++) {
      __m256 xl = _mm256_set1_ps(mk_bf16_to_f32(x[t * ldx + k - 1]));
      for (int g = 0; g < 4; g++)
        acc[t][g] = _mm256_fmadd_ps(xl, bf16_even(_mm256_loadu_si256((const __m256i *)(wt + pairs * 32 + 8 * g))), acc[t][g]);
    }
  }
  for (int t = 0; t < TOKENS; t++)
    for (int g = 0; g < 4; g++) store8(out + t * ldo + 8 * g, acc[t][g], m - 8 * g);
}

void mk_avx2_heads_km_bf16_pairs(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, int64_t n, int64_t m, int64_t k,
                                 const uint32_t *wt) {
  int64_t t = 0;
  for (; t + 2 <= n; t += 2) heads_km_tokens(out + t * ldo, ldo, x + t * ldx, ldx, m, k, wt, 2);
  if (t < n) heads_km_tokens(out + t * ldo, ldo, x + t * ldx, ldx, m, k, wt, 1);
}

/* mk_isa.heads_km_bf16_unit: the unit's column pairs (zeros past m and k), then its tokens as above. */
void mk_avx2_heads_km_bf16_unit(float *out, int64_t ldo, const uint16_t *x, int64_t ldx, const uint16_t *w, int64_t ldw,
                                int64_t n, int64_t m, int64_t k, uint32_t *wt) {
  for (int64_t j = 0; 2 * j < k; j++)
    for (int64_t o = 0; o < 32; o++) {
      uint32_t lo = o < m ? w[2 * j * ldw + o] : 0, hi = o < m && 2 * j + 1 < k ? w[(2 * j + 1) * ldw + o] : 0;
      wt[j * 32 + o] = lo | hi << 16;
    }
  mk_avx2_heads_km_bf16_pairs(out, ldo, x, ldx, n, m, k, wt);
}
