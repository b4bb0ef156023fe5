package io.moemesh.kernels;

import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

/**
 * Times every call into another {@link Kernels}, keyed by op and the shape of what it reads (a matmul by its
 * weight, so the head, each projection and the experts show apart): where a forward pass spends its time, and,
 * by difference with the pass's wall time, how much of it is outside the kernels. Wall time on the calling thread,
 * the kernels' own worker threads included. Each call's {@link Work} is added up too — the bytes it moves and the
 * multiply-adds it does — so a report can set every op against its speed of light on the machine (bytes ÷
 * bandwidth or multiply-adds ÷ peak, whichever is longer). Thread-safe; costs two {@code nanoTime} calls, a map
 * lookup and a few sizes per op.
 */
public final class ProfilingKernels implements Kernels {
  private final Kernels inner;
  private final Map<Key, Totals> totals = new ConcurrentHashMap<>();

  /** An op and what it reads (null when the op is keyed by name alone): no string is built per call. */
  private record Key(String op, Tensor weight, DType x) {
    @Override
    public boolean equals(Object o) {
      return o instanceof Key k && k.op.equals(op) && k.x == x && (k.weight == weight || k.weight != null && weight != null
          && k.weight.dtype() == weight.dtype() && java.util.Arrays.equals(k.weight.shape(), weight.shape()));
    }

    @Override
    public int hashCode() {
      return op.hashCode() * 31 + (weight == null ? 0 : weight.dtype().hashCode() * 31 + weight.dim(0) * 7 + weight.dim(-1));
    }

    String describe() {
      if (weight == null) return x == null ? op : op + " from " + x.name().toLowerCase();
      var s = new StringBuilder(op).append(' ').append(weight.dtype().name().toLowerCase()).append(' ');
      for (int i = 0; i < weight.rank(); i++) s.append(i == 0 ? "" : "×").append(weight.dim(i));
      return x == null ? s.toString() : s.append(" · ").append(x.name().toLowerCase()).append(" x").toString();
    }
  }

  /**
   * What calls moved and computed: the bytes of every tensor they read or wrote (each once a call: what must cross
   * the memory bus at least, when nothing is cached) and their multiply-adds by arithmetic — INT8 (VPDPBUSD), BF16
   * products (VDPBF16PS), F32.
   */
  public record Work(long bytes, long int8Macs, long bf16Macs, long f32Macs) {
    static final Work NONE = new Work(0, 0, 0, 0);

    static Work moving(Tensor... tensors) {
      return new Work(ProfilingKernels.bytes(tensors), 0, 0, 0);
    }

    /** These bytes and {@code macs} multiply-adds of the kind an {@code x} of this dtype is multiplied in. */
    Work plusMacs(DType x, long macs) {
      return switch (x) {
        case I8 -> new Work(bytes, int8Macs + macs, bf16Macs, f32Macs);
        case BF16 -> new Work(bytes, int8Macs, bf16Macs + macs, f32Macs);
        default -> new Work(bytes, int8Macs, bf16Macs, f32Macs + macs);
      };
    }

    Work plusBytes(long more) {
      return new Work(bytes + more, int8Macs, bf16Macs, f32Macs);
    }
  }

  /** Calls, nanoseconds and work of one key. */
  private static final class Totals {
    final LongAdder calls = new LongAdder(), nanos = new LongAdder();
    final LongAdder bytes = new LongAdder(), int8Macs = new LongAdder(), bf16Macs = new LongAdder(), f32Macs = new LongAdder();
  }

  /** One key's totals since the last {@link #reset}. */
  public record OpTime(String op, long calls, long nanos, Work work) {}

  public ProfilingKernels(Kernels inner) {
    this.inner = inner;
  }

  /** Every key's totals, the most expensive first. */
  public List<OpTime> snapshot() {
    return totals.entrySet().stream().map(e -> {
      Totals t = e.getValue();
      return new OpTime(e.getKey().describe(), t.calls.sum(), t.nanos.sum(),
          new Work(t.bytes.sum(), t.int8Macs.sum(), t.bf16Macs.sum(), t.f32Macs.sum()));
    })
        .sorted(Comparator.comparingLong(OpTime::nanos).reversed()).toList();
  }

  public void reset() {
    totals.clear();
  }

  private void time(String op, Supplier<Work> work, Runnable call) {
    time(() -> new Key(op, null, null), work, call);
  }

  /**
   * Runs {@code call} and adds its wall time and work to the key's (both made after: bad input throws first).
   */
  private void time(Supplier<Key> key, Supplier<Work> work, Runnable call) {
    long startNanos = System.nanoTime();
    call.run();
    long elapsed = System.nanoTime() - startNanos;
    Totals t = totals.computeIfAbsent(key.get(), k -> new Totals());
    Work w = work.get();
    t.calls.increment();
    t.nanos.add(elapsed);
    t.bytes.add(w.bytes());
    t.int8Macs.add(w.int8Macs());
    t.bf16Macs.add(w.bf16Macs());
    t.f32Macs.add(w.f32Macs());
  }

  static long bytes(Tensor... tensors) {
    long sum = 0;
    for (Tensor t : tensors) if (t != null) sum += t.numElements() * t.dtype().byteSize();
    return sum;
  }

  private static long sum(Tensor ints) {
    long s = 0;
    for (long i = 0; i < ints.numElements(); i++) s += ints.getInt(i);
    return s;
  }

  /** The first group's weights that exist (groups without rows may have none). */
  private static Tensor firstWeight(Tensor[] w) {
    for (Tensor g : w) if (g != null) return g;
    return null;
  }

  /** The weights of the groups that have rows (the only ones read), and every row's multiply-adds. */
  private static Work groupedWork(Tensor out, Tensor xq, Tensor xScales, Tensor rowOffsets, Tensor[] w, Tensor[] wScales) {
    long weights = 0;
    for (int g = 0; g < w.length; g++)
      if (rowOffsets.getInt(g + 1) > rowOffsets.getInt(g)) weights += bytes(w[g], wScales[g]);
    return Work.moving(out, xq, xScales, rowOffsets).plusBytes(weights).plusMacs(DType.I8, out.numElements() * xq.dim(-1));
  }

  /**
   * The latent rows every query row reads (its context length of them) and, per head, a score over each row's
   * {@code c_kv ‖ k_pe} and a weighted sum of its {@code c_kv}: in BF16 for a BF16 query.
   */
  private static Work mlaWork(Tensor out, Tensor qLatent, Tensor qRope, PagedLatentKv kv) {
    long positions = sum(kv.contextLens());
    int width = kv.pages().dim(-1), heads = qLatent.dim(1), rank = qLatent.dim(-1);
    return Work.moving(out, qLatent, qRope, kv.blockTable(), kv.contextLens())
        .plusBytes(positions * width * kv.pages().dtype().byteSize())
        .plusMacs(qLatent.dtype(), positions * heads * (long) (width + rank));
  }

  @Override
  public String name() {
    return inner.name() + " (profiled)";
  }

  @Override
  public String path() {
    return inner.path();
  }

  @Override
  public void close() {
    inner.close();
  }

  @Override
  public void matmul(Tensor out, Tensor x, Tensor w) {
    time(() -> new Key("matmul", w, x.dtype()), () -> Work.moving(out, x, w).plusMacs(x.dtype(), out.numElements() * w.dim(-1)),
        () -> inner.matmul(out, x, w));
  }

  @Override
  public void matmulHeads(Tensor out, Tensor x, Tensor w) {
    time(() -> new Key("matmulHeads", w, x.dtype()), () -> Work.moving(out, x, w).plusMacs(x.dtype(), out.numElements() * w.dim(-1)),
        () -> inner.matmulHeads(out, x, w));
  }

  @Override
  public void matmulHeadsKm(Tensor out, Tensor x, Tensor w) {
    time(() -> new Key("matmulHeadsKm", w, x.dtype()), () -> Work.moving(out, x, w).plusMacs(x.dtype(), out.numElements() * w.dim(1)),
        () -> inner.matmulHeadsKm(out, x, w));
  }

  @Override
  public void matmulHeadsKmPairs(Tensor out, Tensor x, Tensor wPairs) {
    time(() -> new Key("matmulHeadsKmPairs", wPairs, x.dtype()),
        () -> Work.moving(out, x, wPairs).plusMacs(x.dtype(), out.numElements() * x.dim(2)),
        () -> inner.matmulHeadsKmPairs(out, x, wPairs));
  }

  @Override
  public void quantizeRows(Tensor q, Tensor scales, Tensor x) {
    time("quantizeRows", () -> Work.moving(q, scales, x), () -> inner.quantizeRows(q, scales, x));
  }

  @Override
  public void matmulInt8(Tensor out, Tensor xq, Tensor xScales, Tensor w, Tensor wScales) {
    time(() -> new Key("matmulInt8", w, null), () -> Work.moving(out, xq, xScales, w, wScales).plusMacs(DType.I8, out.numElements() * w.dim(-1)),
        () -> inner.matmulInt8(out, xq, xScales, w, wScales));
  }

  @Override
  public void matmulInt8Grouped(Tensor out, Tensor xq, Tensor xScales, Tensor rowOffsets, Tensor[] w, Tensor[] wScales) {
    time(() -> new Key("matmulInt8Grouped", firstWeight(w), null), () -> groupedWork(out, xq, xScales, rowOffsets, w, wScales),
        () -> inner.matmulInt8Grouped(out, xq, xScales, rowOffsets, w, wScales));
  }

  @Override
  public void dequantizeFp8(Tensor out, Tensor w, Tensor scaleInv, int block) {
    time("dequantizeFp8", () -> Work.moving(out, w, scaleInv), () -> inner.dequantizeFp8(out, w, scaleInv, block));
  }

  @Override
  public void rmsNorm(Tensor out, Tensor x, Tensor weight, float eps) {
    time("rmsNorm", () -> Work.moving(out, x, weight), () -> inner.rmsNorm(out, x, weight, eps));
  }

  @Override
  public void rope(Tensor x, Tensor positions, RopeTable table) {
    time("rope", () -> Work.moving(x, x, positions), () -> inner.rope(x, positions, table));
  }

  @Override
  public void siluMul(Tensor out, Tensor gate, Tensor up) {
    time("siluMul", () -> Work.moving(out, gate, up), () -> inner.siluMul(out, gate, up));
  }

  @Override
  public void siluMulQuantize(Tensor q, Tensor scales, Tensor gate, Tensor up) {
    time("siluMulQuantize", () -> Work.moving(q, scales, gate, up), () -> inner.siluMulQuantize(q, scales, gate, up));
  }

  @Override
  public void moeGate(Tensor expertIds, Tensor weights, Tensor logits, Tensor bias, GateParams params) {
    time("moeGate", () -> Work.moving(expertIds, weights, logits, bias), () -> inner.moeGate(expertIds, weights, logits, bias, params));
  }

  @Override
  public void mlaDecode(Tensor out, Tensor qLatent, Tensor qRope, PagedLatentKv kv, float softmaxScale) {
    time("mlaDecode", () -> mlaWork(out, qLatent, qRope, kv), () -> inner.mlaDecode(out, qLatent, qRope, kv, softmaxScale));
  }

  @Override
  public void attention(Tensor out, Tensor q, Tensor k, Tensor v, Tensor contextLens, float softmaxScale) {
    time("attention", () -> Work.moving(out, q, k, v, contextLens)
        .plusMacs(DType.F32, sum(contextLens) * q.dim(1) * (long) (q.dim(-1) + v.dim(-1))), () -> inner.attention(out, q, k, v, contextLens, softmaxScale));
  }

  @Override
  public void add(Tensor out, Tensor a, Tensor b) {
    time("add", () -> Work.moving(out, a, b), () -> inner.add(out, a, b));
  }

  @Override
  public void gatherQuantize(Tensor q, Tensor scales, Tensor x, Tensor rows) {
    time("gatherQuantize", () -> Work.moving(q, scales, rows).plusBytes(rows.numElements() * x.rowLength() * x.dtype().byteSize()),
        () -> inner.gatherQuantize(q, scales, x, rows));
  }

  @Override
  public void scatterAdd(Tensor out, Tensor y, Tensor rows, Tensor weights) {
    time("scatterAdd", () -> Work.moving(out, out, y, rows, weights), () -> inner.scatterAdd(out, y, rows, weights)); // out read and written
  }

  @Override
  public void argmaxRows(Tensor ids, Tensor x) {
    time("argmaxRows", () -> Work.moving(ids, x), () -> inner.argmaxRows(ids, x));
  }

  @Override
  public void convert(Tensor out, Tensor in) {
    time(() -> new Key("convert", null, in.dtype()), () -> Work.moving(out, in), () -> inner.convert(out, in));
  }
}
