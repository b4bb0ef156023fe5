/* AVX2 tiles of the A8W8 matmul on signed activations (mk_isa.i8_signed_x). Scalar stand-ins: the vector tiles replace
 * them. */
#include "mk_internal.h"

void mk_avx2_rows_u8i8_scaled(float *out, int64_t ldo, const float *xs, const float *ws, int32_t *wsum, int fresh,
                              const uint8_t *xq, int64_t ldx, const int8_t *w, int64_t ldw, int64_t mr, int64_t nr,
                              int64_t k) {
  (void)wsum, (void)fresh;
  const int8_t *x = (const int8_t *)xq;
  for (int64_t t = 0; t < mr; t++)
    for (int64_t o = 0; o < nr; o++) {
      int32_t dot = 0;
      for (int64_t j = 0; j < k; j++) dot += (int32_t)x[t * ldx + j] * w[o * ldw + j];
      out[t * ldo + o] = (float)dot * xs[t] * ws[o];
    }
}

void mk_avx2_gemm_u8i8_tile(int32_t *lanes, int init, const mk_i8_scale *scale, const uint8_t *xq, int64_t ldx,
                            const int8_t *w, int64_t ldw, int64_t k, int64_t mr) {
  const int8_t *x = (const int8_t *)xq;
  for (int64_t t = 0; t < mr; t++)
    for (int64_t o = 0; o < MK_I8_NR; o++) {
      int32_t dot = init ? 0 : lanes[t * MK_I8_NR + o];
      for (int64_t j = 0; j < k; j++) dot += (int32_t)x[t * ldx + j] * w[o * ldw + j];
      if (scale != NULL) scale->out[t * scale->ldo + o] = (float)dot * scale->xs[t] * scale->ws[o];
      else lanes[t * MK_I8_NR + o] = dot;
    }
}

double mk_avx2_int8_peak_loop(int64_t iterations) {
  return mk_isa_portable.int8_peak_loop(iterations);
}
