/* What the contract check's files share: the harness (counters, contexts, seeded random numbers, BF16 helpers,
 * output sentinels) and every check, run in order by contract_check.c's main. */
#ifndef CONTRACT_CHECK_H
#define CONTRACT_CHECK_H

#include "mesh_kernels.h"

#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SENTINEL 0x7FBADBADu /* a signaling-NaN pattern no op writes */

extern int g_passed, g_failed;
extern mk_context *g_c1, *g_c3;
extern int g_isa;
extern uint64_t g_rng;

void report(int ok, const char *fmt, ...);
void seed(uint64_t s);
uint64_t next_u64(void);
double uniform(double lo, double hi);
int32_t rand_int(int32_t lo, int32_t hi);
uint32_t fbits(float f);
float bitsf(uint32_t b);
float ref_bf16_to_f32(uint16_t h);
double bf16_magnitude(uint32_t m);
uint16_t ref_f32_to_bf16(float f);
uint16_t rand_bf16(double lo, double hi);
void *xmalloc(size_t bytes);
float *out_f32(int64_t n, int64_t ld);
int gaps_intact_f32(const float *o, int64_t n, int64_t d, int64_t ld);
int same_bits(const void *a, const void *b, size_t bytes);
void check_matmul(int x_dtype, int w_dtype, int64_t n, int64_t m, int64_t k);
void check_matmul_heads(int x_dtype, int w_dtype, int64_t n, int64_t heads, int64_t m, int64_t k);
void check_matmul_heads_km(int x_dtype, int64_t n, int64_t heads, int64_t m, int64_t k);
void ref_quantize_row(int8_t *q, float *scale, const float *x, int64_t k);
void fill_row_kind(float *x, int64_t k, int kind);
void check_quantize_rows(int x_dtype, int64_t n, int64_t k);
float ref_i8_out(const int8_t *x, const int8_t *w, int64_t k, float xs, float ws);
int8_t rand_i8(void);
void check_matmul_i8(int64_t n, int64_t m, int64_t k);
void check_matmul_i8_grouped(const int32_t *sizes, int64_t groups, int64_t m, int64_t k);
void check_rms_norm(int64_t n, int64_t d);
void fill_gate_up(float *g, float *u, int64_t count);
void check_silu_mul(int64_t n, int64_t d);
void check_convert(void);
void check_rope(void);
void check_add_gather_scatter(void);
float ref_fp8(uint8_t v);
void check_dequant_fp8(int out_dtype);
int by_rank(const void *pa, const void *pb);
void ref_gate(int32_t *ids, double *weights, const float *logits, const float *bias, int32_t e_count, int32_t topk,
                     int32_t n_group, int32_t topk_group, int norm, float factor);
void check_moe_gate(const char *name, int64_t n, int32_t e_count, int32_t topk, int32_t n_group, int32_t topk_group,
                           int use_bias, int norm, float factor, int kind);
int32_t ref_argmax(const float *x, int64_t d);
void check_argmax(int64_t d);
void check_attention(int64_t nq, int64_t nk, int64_t heads, int64_t dqk, int64_t dv, float scale);
void check_mla(const char *name, int pages_dtype, int q_bf16, int64_t nq, int64_t heads, int64_t rank, int64_t rope,
                      int64_t page_size, const int32_t *lens, float softmax_scale);
void check_mla_errors(void);
void check_errors(void);
void check_shared_library(const char *path);
void check_nomem(void);

#endif
