package io.moemesh.kernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The C kernels (src/main/c, ABI in {@code include/mesh_kernels.h}) called through the FFM API. Each
 * instance owns a native context: a thread pool of {@code threads} threads and the instruction-set path
 * picked for this CPU. Calls on one instance are serialized by the context; use one instance per engine.
 */
public final class NativeKernels extends ValidatingKernels implements AutoCloseable {

  /** The C path that runs; ordinals are the {@code MK_ISA_*} codes of mesh_kernels.h. */
  public enum Isa {
    /** Plain C, for any CPU. */
    PORTABLE,
    /** AVX-512 F/BW/VL/DQ with VNNI (INT8 dot products) and BF16 (BF16 × BF16 dot products). */
    AVX512,
    /**
     * AVX-512 F/BW/VL/DQ with VNNI but without BF16 (e.g. Ice Lake): every op as {@link #AVX512} except the
     * BF16 × BF16 matmul, which runs the portable C.
     */
    AVX512_NO_BF16,
    /** AVX2 with FMA and F16C (x86-64-v3: Haswell, Zen 1 and later): 256-bit kernels for CPUs without AVX-512. */
    AVX2;

    /** The name users write: {@code avx512}, {@code avx512-no-bf16}, {@code avx2}, {@code portable}. */
    public String key() {
      return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }

    /** Parses {@link #key()} (any case, {@code _} for {@code -} too), with a clear error otherwise. */
    public static Isa parse(String value) {
      String key = value.trim().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
      for (Isa isa : values()) if (isa.key().equals(key)) return isa;
      throw new IllegalArgumentException("kernel path must be one of auto, avx512, avx512-no-bf16, avx2, portable; got '" + value + "'");
    }
  }

  /** The system property that forces a kernel path for {@link #create(int)}: a path's {@link Isa#key()}, or auto. */
  public static final String ISA_PROPERTY = "moemesh.kernels.isa";
  /** The environment variable that does the same where the property is not set. */
  public static final String ISA_VARIABLE = "MOEMESH_KERNELS_ISA";

  /**
   * The path {@link #ISA_PROPERTY} or {@link #ISA_VARIABLE} forces, if any ({@code auto} or blank: none). A value that
   * names no path throws, so a typo never runs a path nobody asked for.
   */
  public static java.util.Optional<Isa> requestedIsa() {
    String value = System.getProperty(ISA_PROPERTY);
    if (value == null || value.isBlank()) value = System.getenv(ISA_VARIABLE);
    if (value == null || value.isBlank() || value.trim().equalsIgnoreCase("auto")) return java.util.Optional.empty();
    return java.util.Optional.of(Isa.parse(value));
  }

  private final MemorySegment context;
  private final Isa isa;
  private final int threads;

  private NativeKernels(MemorySegment context, Isa isa, int threads) {
    this.context = context;
    this.isa = isa;
    this.threads = threads;
  }

  /**
   * The path {@link #requestedIsa()} names, else the best this CPU supports, on {@code threads} threads. A forced path
   * the CPU cannot run fails here, saying so.
   */
  public static NativeKernels create(int threads) {
    return open(threads, requestedIsa().map(Isa::ordinal).orElse(-1));
  }

  /** A given path (e.g. to test the portable C on an AVX-512 machine); fails if the CPU lacks it. */
  public static NativeKernels create(int threads, Isa isa) {
    return open(threads, isa.ordinal());
  }

  /** Whether this CPU can run {@link Isa#AVX512}. */
  public static boolean cpuHasAvx512() {
    return cpuSupports(Isa.AVX512);
  }

  /** Whether this CPU can run the given path ({@link Isa#PORTABLE} always). */
  public static boolean cpuSupports(Isa isa) {
    try {
      return (int) NativeOps.CPU_SUPPORTS.invokeExact(isa.ordinal()) != 0;
    } catch (Throwable t) {
      throw rethrow("cpuSupports", t);
    }
  }

  private static NativeKernels open(int threads, int isa) {
    if (threads < 1) throw new IllegalArgumentException("threads must be ≥ 1, got " + threads);
    try {
      MemorySegment ctx = (MemorySegment) NativeOps.CONTEXT_CREATE.invokeExact(threads, isa);
      if (ctx.equals(MemorySegment.NULL))
        throw new KernelException("create", "no native context for " + threads + " threads and path " + (isa < 0 ? "auto" : Isa.values()[isa].key()) + " on this CPU");
      int chosen = (int) NativeOps.CONTEXT_ISA.invokeExact(ctx);
      return new NativeKernels(ctx, Isa.values()[chosen], threads);
    } catch (Throwable t) {
      throw rethrow("create", t);
    }
  }

  @Override
  public String name() {
    return "native-" + isa.key() + "-" + threads + "t";
  }

  @Override
  public String path() {
    return isa.key();
  }

  public Isa isa() {
    return isa;
  }

  public int threads() {
    return threads;
  }

  /**
   * Runs a register-only INT8 multiply-accumulate loop on every thread and returns the achieved INT8
   * GOP/s: the machine's practical VNNI peak, against which the GEMM benchmark is read.
   */
  public double measureInt8PeakGops(long iterations) {
    return peakGops(NativeOps.INT8_PEAK_OPS, "measureInt8PeakGops", iterations);
  }

  /** The same for BF16 dot products (VDPBF16PS): the peak the BF16 matmuls and MLA decode are read against. */
  public double measureBf16PeakGops(long iterations) {
    return peakGops(NativeOps.BF16_PEAK_OPS, "measureBf16PeakGops", iterations);
  }

  /**
   * STREAM's triad {@code a[i] = b[i] + s·c[i]} over the first {@code n} floats of each segment, on this context's
   * threads; the caller times it (12 bytes an element by STREAM's count).
   */
  public void streamTriad(MemorySegment a, MemorySegment b, MemorySegment c, long n, float s) {
    long bytes = n * Float.BYTES;
    if (n < 0 || a.byteSize() < bytes || b.byteSize() < bytes || c.byteSize() < bytes)
      throw new KernelException("streamTriad", "needs three segments of " + n + " floats");
    call("streamTriad", ctx -> (int) NativeOps.STREAM_TRIAD.invokeExact(ctx, a, b, c, n, s));
  }

  /** Times one native peak loop ({@code (context, iterations) -> ops}) over every thread: ops per nanosecond. */
  private double peakGops(java.lang.invoke.MethodHandle loop, String op, long iterations) {
    try {
      long start = System.nanoTime();
      double ops = (double) loop.invokeExact(context, iterations);
      return ops / (System.nanoTime() - start);
    } catch (Throwable t) {
      throw rethrow(op, t);
    }
  }

  @Override
  public void close() {
    try {
      NativeOps.CONTEXT_DESTROY.invokeExact(context);
    } catch (Throwable t) {
      throw rethrow("close", t);
    }
  }

  @Override
  protected void doMatmul(Tensor out, Tensor x, Tensor w) {
    call("matmul", ctx -> (int) NativeOps.MATMUL.invokeExact(ctx, out.segment(), out.rowStride(),
        x.segment(), x.dtype().code(), x.rowStride(), w.segment(), w.dtype().code(), w.rowStride(), x.numRows(), w.numRows(), (long) x.rowLength()),
        out, x, w);
  }

  @Override
  protected void doMatmulHeads(Tensor out, Tensor x, Tensor w) {
    call("matmulHeads", ctx -> (int) NativeOps.MATMUL_HEADS.invokeExact(ctx, out.segment(), out.rowStride(),
        x.segment(), x.dtype().code(), x.rowStride(), w.segment(), w.dtype().code(), (long) x.dim(0), (long) w.dim(0),
        (long) w.dim(1), (long) w.dim(2)), out, x, w);
  }

  @Override
  protected void doMatmulHeadsKm(Tensor out, Tensor x, Tensor w) {
    call("matmulHeadsKm", ctx -> (int) NativeOps.MATMUL_HEADS_KM.invokeExact(ctx, out.segment(), out.rowStride(),
        x.segment(), x.dtype().code(), x.rowStride(), w.segment(), w.dtype().code(), (long) x.dim(0), (long) w.dim(0),
        (long) w.dim(2), (long) w.dim(1)), out, x, w);
  }

  @Override
  protected void doMatmulHeadsKmPairs(Tensor out, Tensor x, Tensor wPairs) {
    call("matmulHeadsKmPairs", ctx -> (int) NativeOps.MATMUL_HEADS_KM_PAIRS.invokeExact(ctx, out.segment(), out.rowStride(),
        x.segment(), x.rowStride(), wPairs.segment(), (long) x.dim(0), (long) x.dim(1), (long) out.dim(2), (long) x.dim(2)),
        out, x, wPairs);
  }

  @Override
  protected void doQuantizeRows(Tensor q, Tensor scales, Tensor x) {
    call("quantizeRows", ctx -> (int) NativeOps.QUANTIZE_ROWS.invokeExact(ctx, q.segment(), q.rowStride(),
        scales.segment(), x.segment(), x.dtype().code(), x.rowStride(), x.numRows(), (long) x.rowLength()), q, scales, x);
  }

  @Override
  protected void doMatmulInt8(Tensor out, Tensor xq, Tensor xScales, Tensor w, Tensor wScales) {
    call("matmulInt8", ctx -> (int) NativeOps.MATMUL_I8.invokeExact(ctx, out.segment(), out.rowStride(),
        xq.segment(), xq.rowStride(), xScales.segment(), w.segment(), w.rowStride(), wScales.segment(), xq.numRows(),
        w.numRows(), (long) xq.rowLength()), out, xq, xScales, w, wScales);
  }

  /**
   * The weights go as two pointer tables (null for skipped groups), in a confined arena that lives for the call:
   * one small allocation instead of one downcall per expert.
   */
  @Override
  protected void doMatmulInt8Grouped(Tensor out, Tensor xq, Tensor xScales, Tensor rowOffsets, Tensor[] w,
      Tensor[] wScales) {
    int groups = w.length;
    long ldw = xq.rowLength();
    try (Arena tables = Arena.ofConfined()) {
      MemorySegment wTable = tables.allocate(ValueLayout.ADDRESS, Math.max(groups, 1));
      MemorySegment sTable = tables.allocate(ValueLayout.ADDRESS, Math.max(groups, 1));
      int[] offsets = rowOffsets.toIntArray();
      for (int g = 0; g < groups; g++) {
        boolean used = offsets[g + 1] > offsets[g];
        wTable.setAtIndex(ValueLayout.ADDRESS, g, used ? w[g].segment() : MemorySegment.NULL);
        sTable.setAtIndex(ValueLayout.ADDRESS, g, used ? wScales[g].segment() : MemorySegment.NULL);
        if (used) ldw = w[g].rowStride();
      }
      long weightStride = ldw;
      call("matmulInt8Grouped", ctx -> (int) NativeOps.MATMUL_I8_GROUPED.invokeExact(ctx, out.segment(),
          out.rowStride(), xq.segment(), xq.rowStride(), xScales.segment(), rowOffsets.segment(), (long) groups,
          wTable, weightStride, sTable, (long) out.rowLength(), (long) xq.rowLength()), out, xq, xScales, rowOffsets);
    }
  }

  @Override
  protected void doDequantizeFp8(Tensor out, Tensor w, Tensor scaleInv, int block) {
    call("dequantizeFp8", ctx -> (int) NativeOps.DEQUANT_FP8.invokeExact(ctx, out.segment(), out.dtype().code(),
        out.rowStride(), w.segment(), w.rowStride(), scaleInv.segment(), scaleInv.rowStride(), w.numRows(),
        (long) w.rowLength(), (long) block), out, w, scaleInv);
  }

  @Override
  protected void doRmsNorm(Tensor out, Tensor x, Tensor weight, float eps) {
    call("rmsNorm", ctx -> (int) NativeOps.RMS_NORM.invokeExact(ctx, out.segment(), out.rowStride(),
        x.segment(), x.rowStride(), weight.segment(), eps, x.numRows(), (long) x.rowLength()), out, x, weight);
  }

  @Override
  protected void doRope(Tensor x, Tensor positions, RopeTable table) {
    long rowsPerPosition = x.numRows() / x.dim(0);
    call("rope", ctx -> (int) NativeOps.ROPE.invokeExact(ctx, x.segment(), x.rowStride(), x.numRows(),
        rowsPerPosition, positions.segment(), table.cos().segment(), table.sin().segment(), (long) table.maxPositions(),
        (long) x.rowLength()), x, positions);
  }

  @Override
  protected void doSiluMul(Tensor out, Tensor gate, Tensor up) {
    call("siluMul", ctx -> (int) NativeOps.SILU_MUL.invokeExact(ctx, out.segment(), out.rowStride(),
        gate.segment(), gate.rowStride(), up.segment(), up.rowStride(), gate.numRows(), (long) gate.rowLength()), out, gate, up);
  }

  @Override
  protected void doSiluMulQuantize(Tensor q, Tensor scales, Tensor gate, Tensor up) {
    call("siluMulQuantize", ctx -> (int) NativeOps.SILU_MUL_QUANTIZE.invokeExact(ctx, q.segment(), q.rowStride(), scales.segment(),
        gate.segment(), gate.rowStride(), up.segment(), up.rowStride(), gate.numRows(), (long) gate.rowLength()), q, scales, gate, up);
  }

  @Override
  protected void doMoeGate(Tensor expertIds, Tensor weights, Tensor logits, Tensor bias, GateParams p) {
    MemorySegment biasSegment = bias == null ? MemorySegment.NULL : bias.segment();
    call("moeGate", ctx -> (int) NativeOps.MOE_GATE.invokeExact(ctx, expertIds.segment(), weights.segment(),
        logits.segment(), logits.rowStride(), biasSegment, logits.numRows(), (long) logits.rowLength(), p.topk(),
        p.nGroup(), p.topkGroup(), p.normTopkProb() ? 1 : 0, p.routedScalingFactor()), expertIds, weights, logits);
  }

  @Override
  protected void doMlaDecode(Tensor out, Tensor qLatent, Tensor qRope, PagedLatentKv kv, float softmaxScale) {
    Tensor pages = kv.pages(), table = kv.blockTable();
    call("mlaDecode", ctx -> (int) NativeOps.MLA_DECODE.invokeExact(ctx, out.segment(), out.rowStride(),
        qLatent.segment(), qLatent.rowStride(), qRope.segment(), qRope.rowStride(), qLatent.dtype().code(), (long) qLatent.dim(0),
        (long) qLatent.dim(1), (long) qLatent.dim(2), (long) qRope.dim(2), pages.segment(), pages.dtype().code(),
        (long) pages.dim(0), (long) pages.dim(1), table.segment(), table.rowStride(), (long) table.rowLength(),
        kv.contextLens().segment(), softmaxScale), out, qLatent, qRope, pages, table, kv.contextLens());
  }

  @Override
  protected void doAttention(Tensor out, Tensor q, Tensor k, Tensor v, Tensor contextLens, float softmaxScale) {
    call("attention", ctx -> (int) NativeOps.ATTENTION.invokeExact(ctx, out.segment(), out.rowStride(), q.segment(),
        q.rowStride(), k.segment(), k.rowStride(), v.segment(), v.rowStride(), (long) q.dim(0), (long) k.dim(0),
        (long) q.dim(1), (long) q.rowLength(), (long) v.rowLength(), contextLens.segment(), softmaxScale),
        out, q, k, v, contextLens);
  }

  @Override
  protected void doAdd(Tensor out, Tensor a, Tensor b) {
    call("add", ctx -> (int) NativeOps.ADD.invokeExact(ctx, out.segment(), out.rowStride(), a.segment(), a.rowStride(),
        b.segment(), b.rowStride(), a.numRows(), (long) a.rowLength()), out, a, b);
  }

  @Override
  protected void doGatherQuantize(Tensor q, Tensor scales, Tensor x, Tensor rows) {
    call("gatherQuantize", ctx -> (int) NativeOps.GATHER_QUANTIZE.invokeExact(ctx, q.segment(),
        q.rowStride(), scales.segment(), x.segment(), x.rowStride(), x.numRows(), rows.segment(), rows.numElements(),
        (long) x.rowLength()), q, scales, x, rows);
  }

  @Override
  protected void doScatterAdd(Tensor out, Tensor y, Tensor rows, Tensor weights) {
    call("scatterAdd", ctx -> (int) NativeOps.SCATTER_ADD.invokeExact(ctx, out.segment(), out.rowStride(),
        out.numRows(), y.segment(), y.rowStride(), rows.segment(), weights.segment(), rows.numElements(),
        (long) out.rowLength()), out, y, rows, weights);
  }

  @Override
  protected void doConvert(Tensor out, Tensor in) {
    call("convert", ctx -> (int) NativeOps.CONVERT.invokeExact(ctx, out.segment(), out.dtype().code(),
        out.rowStride(), in.segment(), in.dtype().code(), in.rowStride(), in.numRows(), (long) in.rowLength()), out, in);
  }

  @Override
  protected void doArgmaxRows(Tensor ids, Tensor x) {
    call("argmaxRows", ctx -> (int) NativeOps.ARGMAX_ROWS.invokeExact(ctx, ids.segment(), x.segment(), x.rowStride(),
        x.numRows(), (long) x.rowLength()), ids, x);
  }

  // ---- plumbing ---------------------------------------------------------------------------------------------

  @FunctionalInterface
  private interface NativeCall {
    int invoke(MemorySegment context) throws Throwable;
  }

  private void call(String op, NativeCall body, Tensor... args) {
    int rc;
    try {
      rc = body.invoke(context);
    } catch (Throwable t) {
      throw rethrow(op, t);
    }
    if (rc != 0) throw new KernelException(op, NativeOps.describe(rc) + " [args: " + java.util.Arrays.toString(args) + "]");
  }

  private static RuntimeException rethrow(String op, Throwable t) {
    if (t instanceof KernelException k) return k;
    if (t instanceof Error e) throw e;
    return new KernelException(op, "native call failed: " + t);
  }
}
