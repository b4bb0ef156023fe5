/*
 * contract_check.c: checks libmoemesh_kernels' public ABI (include/mesh_kernels.h) on the portable path,
 * MK_ISA_PORTABLE, against plain scalar references written here from the documented semantics (the header and
 * io.moemesh.kernels.Kernels' javadoc), not from the library's code. It exists for CPUs where the Java contract
 * tests cannot run (aarch64, under qemu-user), and runs natively on x86-64 as well.
 *
 * Every case runs on a 1-thread and a 3-thread context: the 1-thread result is checked against the reference,
 * and the 3-thread result must be bit for bit the 1-thread one (the header's determinism rule). Outputs with a row
 * stride wider than the row get a sentinel in the gap, which must survive. Inputs are seeded and deterministic.
 *
 * Output: one line per check ("ok ..." or "FAIL ..."), then "N passed, M failed"; the exit status is 1 on any
 * failure. MK_CHECK_ISA=<n> in the environment runs the same checks on another path (e.g. 1 for AVX-512 on an
 * x86-64 that has it); the tolerances are the contract's, but a few exact checks are stated only for the portable
 * path and are skipped elsewhere (they say so).
 *
 * Build: see run-checks.sh next to this file (compile with -std=c11 -ffp-contract=off, link the library's objects).
 */
#include "contract_check.h"

/* ------------------------------------------------------------------------------------------------ main */

/* The shared library as a loader sees it: every symbol resolved at load (RTLD_NOW), the ABI's entry points exported. */
void check_shared_library(const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  const char *error = lib == NULL ? dlerror() : NULL;
  static const char *const names[] = {"mk_context_create", "mk_matmul", "mk_quantize_rows", "mk_matmul_i8_grouped",
                                      "mk_mla_decode", "mk_moe_gate", "mk_convert", "mk_argmax_rows"};
  int exported = 0;
  for (size_t i = 0; lib != NULL && i < sizeof names / sizeof names[0]; i++) exported += dlsym(lib, names[i]) != NULL;
  report(lib != NULL && exported == (int)(sizeof names / sizeof names[0]),
         "dlopen(%s, RTLD_NOW): %s, %d of %d entry points exported", path, lib != NULL ? "loads" : error, exported,
         (int)(sizeof names / sizeof names[0]));
  if (lib != NULL) dlclose(lib);
}

/* Usage: contract_check [path of libmoemesh_kernels.so to load-check]; MK_CHECK_ISA=<n> picks the path (default 0). */
int main(int argc, char **argv) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (argc > 1) check_shared_library(argv[1]);
  const char *isa_env = getenv("MK_CHECK_ISA");
  if (isa_env != NULL && *isa_env) g_isa = atoi(isa_env);
  if (!mk_cpu_supports(g_isa)) { /* a path this CPU cannot run: said, not failed, as the Java contract does */
    printf("contract_check: path %d skipped: this CPU cannot run it\n", g_isa);
    return 0;
  }
  g_c1 = mk_context_create(1, g_isa);
  g_c3 = mk_context_create(3, g_isa);
  if (g_c1 == NULL || g_c3 == NULL) {
    report(0, "mk_context_create(1 and 3 threads, isa %d): null (cpu supports it: %d)", g_isa, mk_cpu_supports(g_isa));
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return 1;
  }
  report(mk_context_isa(g_c1) == g_isa && mk_context_isa(g_c3) == g_isa && mk_context_threads(g_c1) == 1 &&
             mk_context_threads(g_c3) == 3,
         "contexts: isa %d/%d (asked %d), threads %d/%d", mk_context_isa(g_c1), mk_context_isa(g_c3), g_isa,
         mk_context_threads(g_c1), mk_context_threads(g_c3));

  static const int64_t sizes[] = {1, 7, 64, 1021};
  /* matmul: every (n, m, k) of the odd sizes, n and m up to 64 (and one n over the 128-row activation block) */
  for (int dt = 0; dt < 3; dt++) {
    int xd = dt == 2 ? MK_BF16 : MK_F32, wd = dt == 0 ? MK_F32 : MK_BF16;
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++)
        for (int c = 0; c < 4; c++) check_matmul(xd, wd, sizes[a], sizes[b], sizes[c]);
    check_matmul(xd, wd, 130, 21, 64);
    check_matmul(xd, wd, 3, 1021, 7);
  }
  check_matmul_heads(MK_F32, MK_F32, 7, 3, 21, 64);
  check_matmul_heads(MK_F32, MK_BF16, 1, 5, 33, 1021);
  check_matmul_heads(MK_BF16, MK_BF16, 7, 3, 21, 300);
  check_matmul_heads_km(MK_F32, 7, 3, 40, 64);
  check_matmul_heads_km(MK_F32, 1, 2, 7, 1021);
  check_matmul_heads_km(MK_BF16, 7, 3, 40, 65);
  check_matmul_heads_km(MK_BF16, 1, 2, 33, 7);

  for (int a = 0; a < 3; a++)
    for (int c = 0; c < 4; c++) {
      check_quantize_rows(MK_F32, sizes[a] + 1, sizes[c]);
      if (a == 1) check_quantize_rows(MK_BF16, sizes[a], sizes[c]);
    }
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < 4; c++) check_matmul_i8(sizes[a], sizes[b], sizes[c]);
  check_matmul_i8(9, 13, 64);    /* the most rows of the few-row kernel */
  check_matmul_i8(10, 13, 1021); /* the fewest of the GEMM tiles */
  check_matmul_i8(130, 20, 64);  /* two activation blocks */
  {
    static const int32_t g1[] = {3, 0, 12, 1, 0, 7};
    static const int32_t g2[] = {0, 0, 1};
    static const int32_t g3[] = {130, 9, 10};
    check_matmul_i8_grouped(g1, 6, 64, 1021);
    check_matmul_i8_grouped(g1, 6, 7, 7);
    check_matmul_i8_grouped(g2, 3, 1, 1);
    check_matmul_i8_grouped(g3, 3, 20, 64);
  }

  for (int a = 0; a < 3; a++)
    for (int c = 0; c < 4; c++) check_rms_norm(sizes[a], sizes[c]);
  for (int a = 0; a < 2; a++)
    for (int c = 0; c < 4; c++) check_silu_mul(sizes[a] + 2 * a, sizes[c]);
  check_silu_mul(64, 1021);
  check_convert();
  check_rope();
  check_add_gather_scatter();
  check_dequant_fp8(MK_F32);
  check_dequant_fp8(MK_BF16);

  check_moe_gate("DeepSeek-V3", 7, 256, 8, 8, 4, 1, 1, 2.5f, 0);
  check_moe_gate("DeepSeek-V3 ties", 3, 256, 8, 8, 4, 1, 1, 2.5f, 1);
  check_moe_gate("tied pairs", 5, 64, 6, 4, 2, 1, 1, 1.0f, 2);
  check_moe_gate("tied pairs no-bias", 5, 64, 6, 4, 2, 0, 0, 1.5f, 2);
  check_moe_gate("groups no-bias", 7, 64, 6, 8, 3, 0, 1, 1.0f, 0);
  check_moe_gate("ungrouped", 64, 7, 3, 1, 1, 0, 0, 1.0f, 0);
  check_moe_gate("ungrouped bias", 1, 7, 7, 1, 1, 1, 1, 2.0f, 0);

  for (int c = 0; c < 4; c++) check_argmax(sizes[c] + (c == 0 ? 1 : 0));
  check_argmax(1);

  check_attention(7, 7, 3, 7, 5, 0.3f);
  check_attention(20, 24, 2, 64, 7, 0.125f); /* two units of 16 query rows, after a 4-key prefix */
  check_attention(1, 1, 1, 1, 1, 1.0f);
  check_attention(33, 40, 1, 9, 64, 2.0f);

  {
    static const int32_t lens1[] = {1, 37, 600}; /* 600: two 512-position chunks */
    static const int32_t lens2[] = {7};
    static const int32_t lens3[] = {64, 1021, 5, 16};
    check_mla("tiny", MK_F32, 0, 1, 1, 1, 0, 1, lens2, 0.5f);
    check_mla("paged", MK_F32, 0, 3, 5, 24, 8, 5, lens1, 0.17f);
    check_mla("paged", MK_BF16, 0, 3, 5, 24, 8, 5, lens1, 0.17f);
    check_mla("paged", MK_BF16, 1, 3, 5, 24, 8, 5, lens1, 0.17f);
    check_mla("sharp", MK_F32, 0, 4, 3, 16, 4, 16, lens3, 3.0f); /* scores spread wide: the max moves, rescaling */
    check_mla("sharp", MK_BF16, 0, 4, 3, 16, 4, 16, lens3, 3.0f);
    check_mla("sharp", MK_BF16, 1, 4, 17, 16, 4, 16, lens3, 3.0f);
    check_mla("wide", MK_F32, 0, 2, 2, 64, 7, 7, lens3, 0.1f);
  }
  check_mla_errors();
  check_errors();
  check_nomem();

  mk_context_destroy(g_c1);
  mk_context_destroy(g_c3);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  fprintf(stderr, "contract_check: %.2f s\n", (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
