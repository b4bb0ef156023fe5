package io.moemesh.bench;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.PagedLatentKv;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import java.util.List;
import java.util.function.Consumer;

/** The benchmarked kernel calls, with their tensors allocated and filled once and reused at every thread count. */
final class KernelCases {
  static final String TRIAD = "triad";
  static final String VNNI_PEAK = "vnni_peak";

  /**
   * One kernel call and what it does per call: {@code workPerCall} bytes (unit GB/s) or operations (GOP/s).
   * Its figure is compared with {@code ratioTo} measured at the same thread count.
   */
  record Case(String name, String shape, double workPerCall, String unit, String ratioTo, Consumer<Kernels> call) {
    double rate(double secondsPerCall) {
      return workPerCall / secondsPerCall / 1e9;
    }
  }

  private KernelCases() {}

  static List<Case> create(TensorArena arena, Progress progress) {
    var fill = new Fill(42);
    progress.log("allocating and filling weights (about 200 MiB) ...");
    List<Case> cases = List.of(
        gemvInt8(arena, fill, 16384, 4096),
        gemvBf16(arena, fill, 8192, 4096),
        gemmInt8(arena, fill, 512, 2048, 7168),
        mlaDecode(arena, fill, new MlaShape(8, 16, 512, 64, 4096, 64)));
    progress.log("weights ready");
    return cases;
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
    return new Case("gemv_int8", shape, (double) m * k, "GB/s", TRIAD, kernels -> kernels.matmulInt8(out, xq, xScales, w, wScales));
  }

  /** Decode GEMV with BF16 weights and an F32 activation row; the work is the weight bytes streamed. */
  private static Case gemvBf16(TensorArena arena, Fill fill, int m, int k) {
    Tensor w = arena.allocate(DType.BF16, m, k);
    Tensor x = arena.allocate(DType.F32, 1, k);
    Tensor out = arena.allocate(DType.F32, 1, m);
    fill.uniform(w, -0.05f, 0.05f);
    fill.uniform(x, -1f, 1f);
    String shape = "n=1 m=" + m + " k=" + k + " BF16 (" + mib(2L * m * k) + ")";
    return new Case("gemv_bf16", shape, 2.0 * m * k, "GB/s", TRIAD, kernels -> kernels.matmul(out, x, w));
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
    return new Case("gemm_int8", shape, 2.0 * n * m * k, "GOP/s", VNNI_PEAK, kernels -> kernels.matmulInt8(out, xq, xScales, w, wScales));
  }

  record MlaShape(int batch, int heads, int kvLoraRank, int ropeDim, int contextLen, int pageSize) {}

  /**
   * Absorbed MLA decode: {@code batch} sequences, one query row each, every one with its own
   * {@code contextLen}-token BF16 latent cache. The work is the KV bytes: each query row reads its context
   * once for all heads, {@code batch · contextLen · (kvLoraRank + ropeDim) · 2}.
   */
  private static Case mlaDecode(TensorArena arena, Fill fill, MlaShape s) {
    int pagesPerSeq = s.contextLen() / s.pageSize();
    int width = s.kvLoraRank() + s.ropeDim();
    Tensor pages = arena.allocate(DType.BF16, s.batch() * pagesPerSeq, s.pageSize(), width);
    Tensor blockTable = arena.allocate(DType.I32, s.batch(), pagesPerSeq);
    Tensor contextLens = arena.allocate(DType.I32, s.batch());
    for (int t = 0; t < s.batch(); t++) {
      contextLens.setInt(t, s.contextLen());
      for (int p = 0; p < pagesPerSeq; p++) blockTable.setInt((long) t * pagesPerSeq + p, t * pagesPerSeq + p);
    }
    Tensor qLatent = arena.allocate(DType.F32, s.batch(), s.heads(), s.kvLoraRank());
    Tensor qRope = arena.allocate(DType.F32, s.batch(), s.heads(), s.ropeDim());
    Tensor out = arena.allocate(DType.F32, s.batch(), s.heads(), s.kvLoraRank());
    fill.uniform(pages, -1f, 1f);
    fill.uniform(qLatent, -1f, 1f);
    fill.uniform(qRope, -1f, 1f);
    var kv = new PagedLatentKv(pages, blockTable, contextLens);
    float softmaxScale = (float) (1 / Math.sqrt(128 + s.ropeDim())); // DeepSeek-V3: qk_nope 128 + qk_rope 64
    long kvBytes = (long) s.batch() * s.contextLen() * width * 2;
    String shape = "b=" + s.batch() + " h=" + s.heads() + " ctx=" + s.contextLen() + " " + s.kvLoraRank() + "+" + s.ropeDim()
        + " BF16 page=" + s.pageSize() + " (" + mib(kvBytes) + ")";
    return new Case("mla_decode", shape, kvBytes, "GB/s", TRIAD, kernels -> kernels.mlaDecode(out, qLatent, qRope, kv, softmaxScale));
  }

  private static String mib(long bytes) {
    double mib = bytes / (double) (1 << 20);
    return (mib == Math.rint(mib) ? String.valueOf((long) mib) : String.format(java.util.Locale.ROOT, "%.1f", mib)) + " MiB";
  }
}
