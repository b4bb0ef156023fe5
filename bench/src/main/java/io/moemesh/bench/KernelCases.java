package io.moemesh.bench;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.PagedLatentKv;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Supplier;

/** The benchmarked kernel calls, with their tensors allocated and filled once and reused at every thread count. */
final class KernelCases {
  static final String TRIAD = "triad";
  static final String INT8_PEAK = "int8_peak";
  static final String GEMV_INT8 = "gemv_int8";
  static final String GEMV_BF16 = "gemv_bf16";
  static final String GEMV_BF16_BF16 = "gemv_bf16_bf16";
  static final String GEMM_INT8 = "gemm_int8";
  static final String GEMM_F32_BF16 = "gemm_f32_bf16";
  static final String GEMM_BF16_BF16 = "gemm_bf16_bf16";
  static final String MLA_DECODE = "mla_decode";
  static final String MLA_DECODE_BF16_QUERY = "mla_decode_bf16q";
  static final String MOE_INT8_EXPERTS = "moe_int8_experts";
  static final String MOE_INT8_GROUPED = "moe_int8_grouped";
  static final String MOE_INT8_DECODE = "moe_int8_decode";

  /**
   * One kernel call and what it does per call: {@code workPerCall} bytes (unit GB/s) or operations (GOP/s).
   * Its figure is compared with {@code ratioTo} measured at the same thread count: triad, the INT8 peak, or a
   * case that runs before it; a null {@code ratioTo} means no ratio.
   */
  record Case(String name, String shape, double workPerCall, String unit, String ratioTo, Consumer<Kernels> call) {
    double rate(double secondsPerCall) {
      return workPerCall / secondsPerCall / 1e9;
    }
  }

  private KernelCases() {}

  /** The cases named in {@code only} (all when it is empty), with the cases they are compared with. */
  static List<Case> create(TensorArena arena, Progress progress, Set<String> only) {
    var fill = new Fill(42);
    progress.log("allocating and filling weights (about 330 MiB) ...");
    List<Case> cases = new ArrayList<>();
    add(cases, only, GEMV_INT8, () -> gemvInt8(arena, fill, 16384, 4096));
    add(cases, only, GEMV_BF16, () -> gemvBf16(arena, fill, DType.F32, 8192, 4096));
    add(cases, only, GEMV_BF16_BF16, () -> gemvBf16(arena, fill, DType.BF16, 8192, 4096));
    add(cases, only, GEMM_INT8, () -> gemmInt8(arena, fill, 512, 2048, 7168));
    // a slice of DeepSeek-V3's lm_head (129280 x 7168 there; 1024 wide here) at a decode batch of 32
    add(cases, only, GEMM_F32_BF16, () -> gemmBf16(arena, fill, DType.F32, 32, 16384, 1024));
    add(cases, only, GEMM_BF16_BF16, () -> gemmBf16(arena, fill, DType.BF16, 32, 16384, 1024));
    // F32 query (exact and bf16 precision) and BF16 query (int8 precision: VDPBF16PS scores), side by side
    add(cases, only, MLA_DECODE, () -> mlaDecode(arena, fill, new MlaShape(8, 16, 512, 64, 4096, 64), DType.F32));
    add(cases, only, MLA_DECODE_BF16_QUERY, () -> mlaDecode(arena, fill, new MlaShape(8, 16, 512, 64, 4096, 64), DType.BF16));
    // one MoE projection at a decode batch of ~13 on the bench model: 40 experts of 2 rows, per expert vs grouped
    add(cases, only, MOE_INT8_EXPERTS, () -> moeInt8(arena, fill, false, 40, 2, 512, 1024));
    add(cases, only, MOE_INT8_GROUPED, () -> moeInt8(arena, fill, true, 40, 2, 512, 1024));
    // the bench model's gate projection at a decode batch of 32: 64 experts of 2 to 4 rows, weights of 4 layers in turn
    add(cases, only, MOE_INT8_DECODE, () -> moeInt8Decode(arena, fill, 4, 64, 512, 1024));
    progress.log("weights ready");
    return cases;
  }

  /** Every case name, in the order they run (a case runs after the case it is compared with). */
  static final List<String> NAMES = List.of(GEMV_INT8, GEMV_BF16, GEMV_BF16_BF16, GEMM_INT8, GEMM_F32_BF16,
      GEMM_BF16_BF16, MLA_DECODE, MLA_DECODE_BF16_QUERY, MOE_INT8_EXPERTS, MOE_INT8_GROUPED, MOE_INT8_DECODE);

  /** Makes the case when {@code only} is empty or names it, or names a case compared with it. */
  private static void add(List<Case> cases, Set<String> only, String name, Supplier<Case> make) {
    if (only.isEmpty() || only.contains(name) || (name.equals(GEMM_F32_BF16) && only.contains(GEMM_BF16_BF16))
        || (name.equals(MOE_INT8_EXPERTS) && only.contains(MOE_INT8_GROUPED))
        || (name.equals(MLA_DECODE) && only.contains(MLA_DECODE_BF16_QUERY)))
      cases.add(make.get());
  }

  /** Decode GEMV, A8W8: one token against an INT8 (m, k) matrix; the work is the weight bytes streamed. */
  private static Case gemvInt8(TensorArena arena, Fill fill, int m, int k) {
    Tensor w = arena.allocate(DType.I8, m, k);
    Tensor wScales = arena.allocate(DType.F32, m);
    Tensor xq = arena.allocate(DType.I8, 1, k);
    Tensor xScales = arena.allocate(DType.F32, 1);
    Tensor out = arena.allocate(DType.F32, 1, m);
    fill.int8(w);
    fill.uniform(wScales, 1e-3f, 2e-3f);
    fill.int8(xq);
    Fill.constant(xScales, 1e-2f);
    String shape = "n=1 m=" + m + " k=" + k + " I8 (" + mib((long) m * k) + ")";
    return new Case(GEMV_INT8, shape, (double) m * k, "GB/s", TRIAD, kernels -> kernels.matmulInt8(out, xq, xScales, w, wScales));
  }

  /**
   * Decode GEMV with BF16 weights and an F32 activation row ({@code gemv_bf16}) or a BF16 one
   * ({@code gemv_bf16_bf16}, VDPBF16PS); the work is the weight bytes streamed.
   */
  private static Case gemvBf16(TensorArena arena, Fill fill, DType xType, int m, int k) {
    Tensor w = arena.allocate(DType.BF16, m, k);
    Tensor x = arena.allocate(xType, 1, k);
    Tensor out = arena.allocate(DType.F32, 1, m);
    fill.uniform(w, -0.05f, 0.05f);
    fill.uniform(x, -1f, 1f);
    String shape = "n=1 m=" + m + " k=" + k + " x " + xType + " w BF16 (" + mib(2L * m * k) + ")";
    String name = xType == DType.BF16 ? GEMV_BF16_BF16 : GEMV_BF16;
    return new Case(name, shape, 2.0 * m * k, "GB/s", TRIAD, kernels -> kernels.matmul(out, x, w));
  }

  /**
   * Batched-decode GEMM on BF16 weights, 2·n·m·k floating-point operations: with an F32 x
   * ({@code gemm_f32_bf16}, F32 FMAs on widened weights; the baseline, no ratio) and with a BF16 x
   * ({@code gemm_bf16_bf16}, VDPBF16PS), compared with the F32-x path on the same shape in the same run.
   */
  private static Case gemmBf16(TensorArena arena, Fill fill, DType xType, int n, int m, int k) {
    Tensor w = arena.allocate(DType.BF16, m, k);
    Tensor x = arena.allocate(xType, n, k);
    Tensor out = arena.allocate(DType.F32, n, m);
    fill.uniform(w, -0.05f, 0.05f);
    fill.uniform(x, -1f, 1f);
    String shape = "n=" + n + " m=" + m + " k=" + k + " x " + xType + " w BF16";
    boolean bf16 = xType == DType.BF16;
    return new Case(bf16 ? GEMM_BF16_BF16 : GEMM_F32_BF16, shape, 2.0 * n * m * k, "GFLOP/s",
        bf16 ? GEMM_F32_BF16 : null, kernels -> kernels.matmul(out, x, w));
  }

  /** Prefill GEMM, A8W8 (DeepSeek-V3 expert up/gate projection shape); the work is 2·n·m·k operations. */
  private static Case gemmInt8(TensorArena arena, Fill fill, int n, int m, int k) {
    Tensor w = arena.allocate(DType.I8, m, k);
    Tensor wScales = arena.allocate(DType.F32, m);
    Tensor xq = arena.allocate(DType.I8, n, k);
    Tensor xScales = arena.allocate(DType.F32, n);
    Tensor out = arena.allocate(DType.F32, n, m);
    fill.int8(w);
    fill.uniform(wScales, 1e-3f, 2e-3f);
    fill.int8(xq);
    fill.uniform(xScales, 1e-2f, 2e-2f);
    String shape = "n=" + n + " m=" + m + " k=" + k + " I8";
    return new Case(GEMM_INT8, shape, 2.0 * n * m * k, "GOP/s", INT8_PEAK, kernels -> kernels.matmulInt8(out, xq, xScales, w, wScales));
  }

  /**
   * A MoE layer's projection in batched decode, A8W8: {@code groups} experts of {@code rows} rows each, each with
   * its own (m, k) weights, as {@code groups} matmulInt8 calls ({@code moe_int8_experts}, against triad) or one
   * matmulInt8Grouped call ({@code moe_int8_grouped}, against the per-expert calls on the same tensors'
   * shapes in the same run: the ratio is the speed-up). The work is the weight bytes streamed.
   */
  private static Case moeInt8(TensorArena arena, Fill fill, boolean grouped, int groups, int rows, int m, int k) {
    int n = groups * rows;
    Tensor xq = arena.allocate(DType.I8, n, k);
    Tensor xScales = arena.allocate(DType.F32, n);
    Tensor out = arena.allocate(DType.F32, n, m);
    fill.int8(xq);
    fill.uniform(xScales, 1e-2f, 2e-2f);
    Tensor[] w = new Tensor[groups], wScales = new Tensor[groups];
    int[] offsets = new int[groups + 1];
    for (int g = 0; g < groups; g++) {
      w[g] = arena.allocate(DType.I8, m, k);
      wScales[g] = arena.allocate(DType.F32, m);
      fill.int8(w[g]);
      fill.uniform(wScales[g], 1e-3f, 2e-3f);
      offsets[g + 1] = offsets[g] + rows;
    }
    Tensor rowOffsets = arena.ofInts(offsets, groups + 1);
    String shape = groups + " x (n=" + rows + " m=" + m + " k=" + k + ") I8 (" + mib((long) groups * m * k) + ")";
    double bytes = (double) groups * m * k;
    if (grouped)
      return new Case(MOE_INT8_GROUPED, shape + " 1 call", bytes, "GB/s", MOE_INT8_EXPERTS,
          kernels -> kernels.matmulInt8Grouped(out, xq, xScales, rowOffsets, w, wScales));
    return new Case(MOE_INT8_EXPERTS, shape + " " + groups + " calls", bytes, "GB/s", TRIAD, kernels -> {
      for (int g = 0; g < groups; g++)
        kernels.matmulInt8(out.rows(g * rows, (g + 1) * rows), xq.rows(g * rows, (g + 1) * rows),
            xScales.rows(g * rows, (g + 1) * rows), w[g], wScales[g]);
    });
  }

  /**
   * A MoE projection of the bench model in batched decode, A8W8, one grouped call: 32 tokens routed to 6 of
   * {@code experts} experts each are ~3 rows per expert, here 2, 3 and 4 in turn. Each call takes the next of
   * {@code layers} layers' weights, so they stream from memory as in a decode step, not from the L3 cache. The work
   * is the weight bytes streamed.
   */
  private static Case moeInt8Decode(TensorArena arena, Fill fill, int layers, int experts, int m, int k) {
    int[] offsets = new int[experts + 1];
    for (int e = 0; e < experts; e++) offsets[e + 1] = offsets[e] + 2 + e % 3;
    int n = offsets[experts];
    Tensor xq = arena.allocate(DType.I8, n, k);
    Tensor xScales = arena.allocate(DType.F32, n);
    Tensor out = arena.allocate(DType.F32, n, m);
    fill.int8(xq);
    fill.uniform(xScales, 1e-2f, 2e-2f);
    Tensor[][] w = new Tensor[layers][experts], wScales = new Tensor[layers][experts];
    for (int l = 0; l < layers; l++)
      for (int e = 0; e < experts; e++) {
        w[l][e] = arena.allocate(DType.I8, m, k);
        wScales[l][e] = arena.allocate(DType.F32, m);
        fill.int8(w[l][e]);
        fill.uniform(wScales[l][e], 1e-3f, 2e-3f);
      }
    Tensor rowOffsets = arena.ofInts(offsets, experts + 1);
    int[] calls = {0};
    String shape = experts + " x (n=2..4 m=" + m + " k=" + k + ") I8, n=" + n + ", " + layers + " layers in turn ("
        + mib((long) experts * m * k) + " each)";
    return new Case(MOE_INT8_DECODE, shape, (double) experts * m * k, "GB/s", TRIAD, kernels -> {
      int l = calls[0]++ % layers;
      kernels.matmulInt8Grouped(out, xq, xScales, rowOffsets, w[l], wScales[l]);
    });
  }

  record MlaShape(int batch, int heads, int kvLoraRank, int ropeDim, int contextLen, int pageSize) {}

  /**
   * Absorbed MLA decode: {@code batch} sequences, one query row each, every one with its own
   * {@code contextLen}-token BF16 latent cache. The work is the KV bytes: each query row reads its context
   * once for all heads, {@code batch · contextLen · (kvLoraRank + ropeDim) · 2}.
   */
  private static Case mlaDecode(TensorArena arena, Fill fill, MlaShape s, DType queryType) {
    int pagesPerSeq = s.contextLen() / s.pageSize();
    int width = s.kvLoraRank() + s.ropeDim();
    Tensor pages = arena.allocate(DType.BF16, s.batch() * pagesPerSeq, s.pageSize(), width);
    Tensor blockTable = arena.allocate(DType.I32, s.batch(), pagesPerSeq);
    Tensor contextLens = arena.allocate(DType.I32, s.batch());
    for (int t = 0; t < s.batch(); t++) {
      contextLens.setInt(t, s.contextLen());
      for (int p = 0; p < pagesPerSeq; p++) blockTable.setInt((long) t * pagesPerSeq + p, t * pagesPerSeq + p);
    }
    Tensor qLatent = arena.allocate(queryType, s.batch(), s.heads(), s.kvLoraRank());
    Tensor qRope = arena.allocate(queryType, s.batch(), s.heads(), s.ropeDim());
    Tensor out = arena.allocate(DType.F32, s.batch(), s.heads(), s.kvLoraRank());
    fill.uniform(pages, -1f, 1f);
    fill.uniform(qLatent, -1f, 1f);
    fill.uniform(qRope, -1f, 1f);
    var kv = new PagedLatentKv(pages, blockTable, contextLens);
    float softmaxScale = (float) (1 / Math.sqrt(128 + s.ropeDim())); // DeepSeek-V3: qk_nope 128 + qk_rope 64
    long kvBytes = (long) s.batch() * s.contextLen() * width * 2;
    String shape = "b=" + s.batch() + " h=" + s.heads() + " ctx=" + s.contextLen() + " " + s.kvLoraRank() + "+" + s.ropeDim()
        + " BF16 page=" + s.pageSize() + ", " + queryType.name() + " query (" + mib(kvBytes) + ")";
    return queryType == DType.BF16 // the BF16 query against the F32 one, on the same cache shape
        ? new Case(MLA_DECODE_BF16_QUERY, shape, kvBytes, "GB/s", MLA_DECODE, kernels -> kernels.mlaDecode(out, qLatent, qRope, kv, softmaxScale))
        : new Case(MLA_DECODE, shape, kvBytes, "GB/s", TRIAD, kernels -> kernels.mlaDecode(out, qLatent, qRope, kv, softmaxScale));
  }

  private static String mib(long bytes) {
    double mib = bytes / (double) (1 << 20);
    return (mib == Math.rint(mib) ? String.valueOf((long) mib) : String.format(java.util.Locale.ROOT, "%.1f", mib)) + " MiB";
  }
}
