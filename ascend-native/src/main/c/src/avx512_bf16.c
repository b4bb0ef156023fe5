/* AVX512-BF16 tiles of the BF16 x BF16 matmul: VDPBF16PS multiplies 32 BF16 pairs per instruction, each
 * product exact, and adds them into 16 F32 lanes (round to nearest even; BF16 subnormal inputs and F32
 * subnormal results are flushed to zero, whatever MXCSR says). Only this file is compiled with
 * -mavx512bf16: a context whose CPU lacks it never calls in here (context.c), and no other AVX-512 kernel
 * can pick up a BF16 instruction by accident.
 *
 * Reduction order of out[t][o], the same in every tile shape: one 16-lane F32 accumulator, started at +0;
 * for each full 32-element chunk of k one VDPBF16PS (lane i takes elements 2i and 2i+1 of the chunk); the
 * tail (k mod 32) as one more VDPBF16PS on masked loads (the zeros add +0); then one fixed-tree horizontal
 * sum (hsum16). A tile of MR x NR only runs MR·NR such chains side by side, so a row's bits are the same in
 * the GEMV (n < 4) or the GEMM tiles, first or last tile, on one thread or many. */
#include "mk_internal.h"

#include <immintrin.h>

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

/* The horizontal sum, written out so its tree is fixed here: halves 256 + 256, 128 + 128, then 2 + 2, 1 + 1. */
INLINE float hsum16(__m512 v) {
  __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  __m128 d = _mm_add_ss(c, _mm_movehdup_ps(c));
  return _mm_cvtss_f32(d);
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
#define ST(t, o) out[t * ldo + o] = hsum16(c##t##o);
#define ROW(t) ST(t, 0) ST(t, 1) ST(t, 2) ST(t, 3)
  ROW(0) ROW(1) ROW(2) ROW(3)
#undef ROW
#undef ST
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
