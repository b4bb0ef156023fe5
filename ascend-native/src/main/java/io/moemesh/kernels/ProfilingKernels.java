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

  private void record(String op, long startNanos) {
    record(new Key(op, null, null), startNanos);
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
    long t = System.nanoTime();
    inner.matmul(out, x, w);
    record(new Key("matmul", w, x.dtype()), t);
  }

  @Override
  public void matmulHeads(Tensor out, Tensor x, Tensor w) {
    long t = System.nanoTime();
    inner.matmulHeads(out, x, w);
    record(new Key("matmulHeads", w, x.dtype()), t);
  }

  @Override
  public void quantizeRows(Tensor q, Tensor scales, Tensor x) {
    long t = System.nanoTime();
    inner.quantizeRows(q, scales, x);
    record("quantizeRows", t);
  }

  @Override
  public void matmulInt8(Tensor out, Tensor xq, Tensor xScales, Tensor w, Tensor wScales) {
    long t = System.nanoTime();
    inner.matmulInt8(out, xq, xScales, w, wScales);
    record(new Key("matmulInt8", w, null), t);
  }

  @Override
  public void matmulInt8Grouped(Tensor out, Tensor xq, Tensor xScales, Tensor rowOffsets, Tensor[] w, Tensor[] wScales) {
    long t = System.nanoTime();
    inner.matmulInt8Grouped(out, xq, xScales, rowOffsets, w, wScales);
    Tensor any = null; // groups without rows may have no weights
    for (Tensor g : w) if (any == null) any = g;
    record(new Key("matmulInt8Grouped", any, null), t);
  }

  @Override
  public void dequantizeFp8(Tensor out, Tensor w, Tensor scaleInv, int block) {
    long t = System.nanoTime();
    inner.dequantizeFp8(out, w, scaleInv, block);
    record("dequantizeFp8", t);
  }

  @Override
  public void rmsNorm(Tensor out, Tensor x, Tensor weight, float eps) {
    long t = System.nanoTime();
    inner.rmsNorm(out, x, weight, eps);
    record("rmsNorm", t);
  }

  @Override
  public void rope(Tensor x, Tensor positions, RopeTable table) {
    long t = System.nanoTime();
    inner.rope(x, positions, table);
    record("rope", t);
  }

  @Override
  public void siluMul(Tensor out, Tensor gate, Tensor up) {
    long t = System.nanoTime();
    inner.siluMul(out, gate, up);
    record("siluMul", t);
  }

  @Override
  public void moeGate(Tensor expertIds, Tensor weights, Tensor logits, Tensor bias, GateParams params) {
    long t = System.nanoTime();
    inner.moeGate(expertIds, weights, logits, bias, params);
    record("moeGate", t);
  }

  @Override
  public void mlaDecode(Tensor out, Tensor qLatent, Tensor qRope, PagedLatentKv kv, float softmaxScale) {
    long t = System.nanoTime();
    inner.mlaDecode(out, qLatent, qRope, kv, softmaxScale);
    record("mlaDecode", t);
  }

  @Override
  public void attention(Tensor out, Tensor q, Tensor k, Tensor v, Tensor contextLens, float softmaxScale) {
    long t = System.nanoTime();
    inner.attention(out, q, k, v, contextLens, softmaxScale);
    record("attention", t);
  }

  @Override
  public void add(Tensor out, Tensor a, Tensor b) {
    long t = System.nanoTime();
    inner.add(out, a, b);
    record("add", t);
  }

  @Override
  public void gatherQuantize(Tensor q, Tensor scales, Tensor x, Tensor rows) {
    long t = System.nanoTime();
    inner.gatherQuantize(q, scales, x, rows);
    record("gatherQuantize", t);
  }

  @Override
  public void scatterAdd(Tensor out, Tensor y, Tensor rows, Tensor weights) {
    long t = System.nanoTime();
    inner.scatterAdd(out, y, rows, weights);
    record("scatterAdd", t);
  }

  @Override
  public void convert(Tensor out, Tensor in) {
    long t = System.nanoTime();
    inner.convert(out, in);
    record(new Key("convert", null, in.dtype()), t);
  }
}
