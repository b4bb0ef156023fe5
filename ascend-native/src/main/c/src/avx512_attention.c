/* The prompt attention's row kernels on AVX-512 (mk_isa.softmax and mk_isa.weighted_rows); attention.c walks the
 * heads and rows and gets the scores from the matmul tiles. */
#include "mk_internal.h"

#include <immintrin.h>
#include <math.h>

#include "avx512_math.h"

#define INLINE static inline __attribute__((always_inline))

INLINE __mmask16 mask16(int64_t remaining) {
  return remaining <= 0 ? 0 : remaining >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << remaining) - 1);
}

/* s = softmax(s · scale): the max of the scaled scores, e^(s - max) by exp_ps, their sum in 16 lanes (hsum16's tree),
 * then each weight divided by it. */
void mk_avx512_softmax(float *s, int64_t n, float scale) {
  __m512 sc = _mm512_set1_ps(scale), top = _mm512_set1_ps(-INFINITY);
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 m = mask16(n - j);
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + j), sc);
    _mm512_mask_storeu_ps(s + j, m, v);
    top = _mm512_mask_max_ps(top, m, top, v);
  }
  __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(top)), sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 m = mask16(n - j);
    __m512 e = _mm512_maskz_mov_ps(m, exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + j), max)));
    _mm512_mask_storeu_ps(s + j, m, e);
    sum = _mm512_add_ps(sum, e);
  }
  __m512 total = _mm512_set1_ps(hsum16(sum));
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 m = mask16(n - j);
    _mm512_mask_storeu_ps(s + j, m, _mm512_div_ps(_mm512_maskz_loadu_ps(m, s + j), total));
  }
}

/* MR rows' outputs over the 64 columns at c, positions [from, to): the positions all MR rows see with 4 values loaded
 * once for MR rows, then each row's own last positions on its stored outputs. Either way acc += w_r[p] · v_p[c + 16z]
 * in position order, started at zero when from is 0, else at what o holds. */
INLINE void rows_chunk(float *o, int64_t ldo, const float *w, int64_t ldw, const float *v, int64_t ldv,
                       const int MR, const int64_t *counts, int64_t c, int64_t d, int64_t from, int64_t to) {
  __mmask16 m0 = mask16(d - c), m1 = mask16(d - c - 16), m2 = mask16(d - c - 32), m3 = mask16(d - c - 48);
  int64_t common = to;
  for (int r = 0; r < MR; r++) common = counts[r] < common ? counts[r] : common;
  if (common < from) common = from;
#define LOAD(r)                                                                                         \
  __m512 a##r##0 = _mm512_setzero_ps(), a##r##1 = a##r##0, a##r##2 = a##r##0, a##r##3 = a##r##0;      \
  if (r < MR && from > 0) {                                                                             \
    const float *in = o + r * ldo + c;                                                                  \
    a##r##0 = _mm512_maskz_loadu_ps(m0, in), a##r##1 = _mm512_maskz_loadu_ps(m1, in + 16);            \
    a##r##2 = _mm512_maskz_loadu_ps(m2, in + 32), a##r##3 = _mm512_maskz_loadu_ps(m3, in + 48);       \
  }
  LOAD(0) LOAD(1) LOAD(2) LOAD(3)
#undef LOAD
  for (int64_t p = from; p < common; p++) {
    const float *vp = v + p * ldv + c;
    __m512 v0 = _mm512_maskz_loadu_ps(m0, vp), v1 = _mm512_maskz_loadu_ps(m1, vp + 16),
           v2 = _mm512_maskz_loadu_ps(m2, vp + 32), v3 = _mm512_maskz_loadu_ps(m3, vp + 48);
#define ROW(r)                                                                                          \
  if (r < MR) {                                                                                         \
    __m512 wr = _mm512_set1_ps(w[r * ldw + p]);                                                         \
    a##r##0 = _mm512_fmadd_ps(wr, v0, a##r##0), a##r##1 = _mm512_fmadd_ps(wr, v1, a##r##1);             \
    a##r##2 = _mm512_fmadd_ps(wr, v2, a##r##2), a##r##3 = _mm512_fmadd_ps(wr, v3, a##r##3);             \
  }
    ROW(0) ROW(1) ROW(2) ROW(3)
#undef ROW
  }
#define STORE(r)                                                                                        \
  if (r < MR) {                                                                                         \
    float *out = o + r * ldo + c;                                                                       \
    _mm512_mask_storeu_ps(out, m0, a##r##0), _mm512_mask_storeu_ps(out + 16, m1, a##r##1);              \
    _mm512_mask_storeu_ps(out + 32, m2, a##r##2), _mm512_mask_storeu_ps(out + 48, m3, a##r##3);         \
  }
  STORE(0) STORE(1) STORE(2) STORE(3)
#undef STORE
  for (int r = 0; r < MR; r++) {
    int64_t end = counts[r] < to ? counts[r] : to;
    if (end <= common) continue;
    float *out = o + r * ldo + c;
    __m512 b0 = _mm512_maskz_loadu_ps(m0, out), b1 = _mm512_maskz_loadu_ps(m1, out + 16),
           b2 = _mm512_maskz_loadu_ps(m2, out + 32), b3 = _mm512_maskz_loadu_ps(m3, out + 48);
    for (int64_t p = common; p < end; p++) {
      const float *vp = v + p * ldv + c;
      __m512 wr = _mm512_set1_ps(w[r * ldw + p]);
      b0 = _mm512_fmadd_ps(wr, _mm512_maskz_loadu_ps(m0, vp), b0), b1 = _mm512_fmadd_ps(wr, _mm512_maskz_loadu_ps(m1, vp + 16), b1);
      b2 = _mm512_fmadd_ps(wr, _mm512_maskz_loadu_ps(m2, vp + 32), b2), b3 = _mm512_fmadd_ps(wr, _mm512_maskz_loadu_ps(m3, vp + 48), b3);
    }
    _mm512_mask_storeu_ps(out, m0, b0), _mm512_mask_storeu_ps(out + 16, m1, b1);
    _mm512_mask_storeu_ps(out + 32, m2, b2), _mm512_mask_storeu_ps(out + 48, m3, b3);
  }
}

void mk_avx512_weighted_rows(float *o, int64_t ldo, const float *w, int64_t ldw, const float *v, int64_t ldv, int64_t mr,
                             const int64_t *counts, int64_t d, int64_t from, int64_t to) {
  for (int64_t c = 0; c < d; c += 64) switch (mr) {
      case 4: rows_chunk(o, ldo, w, ldw, v, ldv, 4, counts, c, d, from, to); break;
      case 3: rows_chunk(o, ldo, w, ldw, v, ldv, 3, counts, c, d, from, to); break;
      case 2: rows_chunk(o, ldo, w, ldw, v, ldv, 2, counts, c, d, from, to); break;
      default:
        for (int64_t r = 0; r < mr; r++) rows_chunk(o + r * ldo, ldo, w + r * ldw, ldw, v, ldv, 1, counts + r, c, d, from, to);
    }
}
