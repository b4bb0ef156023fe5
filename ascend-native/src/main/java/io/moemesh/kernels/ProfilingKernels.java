package io.moemesh.kernels;

import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Times every call into another {@link Kernels}, keyed by op and the shape of what it reads (a matmul by its
 * weight, so the head, each projection and the experts show apart): where a forward pass spends its time, and,
 * by difference with the pass's wall time, how much of it is outside the kernels. Wall time on the calling thread,
 * the kernels' own worker threads included. Thread-safe; costs two {@code nanoTime} calls and a map lookup per op.
 */
public final class ProfilingKernels implements Kernels {
  private final Kernels inner;
  private final Map<Key, Totals> totals = new ConcurrentHashMap<>();
  private volatile boolean recording = true;

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

  /** Calls and nanoseconds of one key. */
  private static final class Totals {
    final LongAdder calls = new LongAdder(), nanos = new LongAdder();
  }

  /** One key's totals since the last {@link #reset}. */
  public record OpTime(String op, long calls, long nanos) {}

  public ProfilingKernels(Kernels inner) {
    this.inner = inner;
  }

  /** Every key's totals, the most expensive first. */
  public List<OpTime> snapshot() {
    return totals.entrySet().stream().map(e -> new OpTime(e.getKey().describe(), e.getValue().calls.sum(), e.getValue().nanos.sum()))
        .sorted(Comparator.comparingLong(OpTime::nanos).reversed()).toList();
  }

  public void reset() {
    totals.clear();
  }

  /** Whether calls are recorded from now on (they are from the start): a benchmark times only the steps it measures. */
  public void recording(boolean on) {
    recording = on;
  }

  private void time(String op, Runnable call) {
    time(() -> new Key(op, null, null), call);
  }

  /** Runs {@code call} and, while recording, adds its wall time to the key's (the key made after: bad input throws first). */
  private void time(java.util.function.Supplier<Key> key, Runnable call) {
    long startNanos = System.nanoTime();
    call.run();
    record(key.get(), startNanos);
  }

  /** The first group's weights that exist (groups without rows may have none). */
  private static Tensor firstWeight(Tensor[] w) {
    for (Tensor g : w) if (g != null) return g;
    return null;
  }

  private void record(Key key, long startNanos) {
    if (!recording) return;
    long elapsed = System.nanoTime() - startNanos;
    Totals t = totals.computeIfAbsent(key, k -> new Totals());
    t.calls.increment();
    t.nanos.add(elapsed);
  }

  @Override
  public String name() {
    return inner.name() + " (profiled)";
  }

  @Override
  public void close() {
    inner.close();
  }

  @Override
  public void matmul(Tensor out, Tensor x, Tensor w) {
    time(() -> new Key("matmul", w, x.dtype()), () -> inner.matmul(out, x, w));
  }

  @Override
  public void matmulHeads(Tensor out, Tensor x, Tensor w) {
    time(() -> new Key("matmulHeads", w, x.dtype()), () -> inner.matmulHeads(out, x, w));
  }

  @Override
  public void quantizeRows(Tensor q, Tensor scales, Tensor x) {
    time("quantizeRows", () -> inner.quantizeRows(q, scales, x));
  }

  @Override
  public void matmulInt8(Tensor out, Tensor xq, Tensor xScales, Tensor w, Tensor wScales) {
    time(() -> new Key("matmulInt8", w, null), () -> inner.matmulInt8(out, xq, xScales, w, wScales));
  }

  @Override
  public void matmulInt8Grouped(Tensor out, Tensor xq, Tensor xScales, Tensor rowOffsets, Tensor[] w, Tensor[] wScales) {
    time(() -> new Key("matmulInt8Grouped", firstWeight(w), null), () -> inner.matmulInt8Grouped(out, xq, xScales, rowOffsets, w, wScales));
  }

  @Override
  public void dequantizeFp8(Tensor out, Tensor w, Tensor scaleInv, int block) {
    time("dequantizeFp8", () -> inner.dequantizeFp8(out, w, scaleInv, block));
  }

  @Override
  public void rmsNorm(Tensor out, Tensor x, Tensor weight, float eps) {
    time("rmsNorm", () -> inner.rmsNorm(out, x, weight, eps));
  }

  @Override
  public void rope(Tensor x, Tensor positions, RopeTable table) {
    time("rope", () -> inner.rope(x, positions, table));
  }

  @Override
  public void siluMul(Tensor out, Tensor gate, Tensor up) {
    time("siluMul", () -> inner.siluMul(out, gate, up));
  }

  @Override
  public void moeGate(Tensor expertIds, Tensor weights, Tensor logits, Tensor bias, GateParams params) {
    time("moeGate", () -> inner.moeGate(expertIds, weights, logits, bias, params));
  }

  @Override
  public void mlaDecode(Tensor out, Tensor qLatent, Tensor qRope, PagedLatentKv kv, float softmaxScale) {
    time("mlaDecode", () -> inner.mlaDecode(out, qLatent, qRope, kv, softmaxScale));
  }

  @Override
  public void attention(Tensor out, Tensor q, Tensor k, Tensor v, Tensor contextLens, float softmaxScale) {
    time("attention", () -> inner.attention(out, q, k, v, contextLens, softmaxScale));
  }

  @Override
  public void add(Tensor out, Tensor a, Tensor b) {
    time("add", () -> inner.add(out, a, b));
  }

  @Override
  public void gatherQuantize(Tensor q, Tensor scales, Tensor x, Tensor rows) {
    time("gatherQuantize", () -> inner.gatherQuantize(q, scales, x, rows));
  }

  @Override
  public void scatterAdd(Tensor out, Tensor y, Tensor rows, Tensor weights) {
    time("scatterAdd", () -> inner.scatterAdd(out, y, rows, weights));
  }

  @Override
  public void argmaxRows(Tensor ids, Tensor x) {
    time("argmaxRows", () -> inner.argmaxRows(ids, x));
  }

  @Override
  public void convert(Tensor out, Tensor in) {
    time(() -> new Key("convert", null, in.dtype()), () -> inner.convert(out, in));
  }
}
