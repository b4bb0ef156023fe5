package io.moemesh.model;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.moe.ExpertBackend;
import io.moemesh.model.moe.ExpertDispatch;
import io.moemesh.model.moe.Routing;
import java.util.Map;
import java.util.function.Function;

/** Experts computed in this process, combined in routing order (by expert, never by arrival). */
public final class LocalExperts implements ExpertBackend {
  private final Map<Integer, Mlp[]> routedByLayer; // layerId → experts (null where not held)
  private final Map<Integer, Mlp> sharedByLayer;   // layerId → shared experts (one fused MLP)

  private final DType outputDType;

  public LocalExperts(Map<Integer, Mlp[]> routedByLayer, Map<Integer, Mlp> sharedByLayer, Precision precision) {
    this.routedByLayer = routedByLayer;
    this.sharedByLayer = sharedByLayer;
    this.outputDType = outputDType(precision);
  }

  /**
   * The dtype of an expert's output as it leaves the experts: BF16 in {@code int8} precision (A8W8 with the
   * BF16 combine of the Ascend deployment: half the combine bytes), F32 in {@code exact} and {@code bf16}
   * (whose contract is F32 compute).
   */
  public static DType outputDType(Precision precision) {
    return precision == Precision.INT8 ? DType.BF16 : DType.F32;
  }

  /**
   * All of a layer's routed experts in a few kernel calls: the tokens are gathered (and, for A8W8, quantized)
   * once in routing order, so each expert's tokens are one contiguous block of rows; then
   * {@link #routedOutputs}; one scatter-add combines in routing order. Every op is row-independent, so this
   * equals running the experts one by one, and equals an expert service computing the same rows.
   */
  @Override
  public void routed(Kernels k, int layerId, Tensor out, Tensor x, Routing routing, TensorArena scratch) {
    int assignments = routing.tokenRows().length, dim = x.dim(1);
    if (assignments == 0) return;
    Tensor rows = scratch.ofInts(routing.tokenRows(), assignments);
    Tensor y = scratch.empty(DType.F32, assignments, dim);
    if (isInt8(layerId, routing)) {
      Tensor xq = scratch.empty(DType.I8, assignments, dim), xs = scratch.empty(DType.F32, assignments);
      k.gatherQuantize(xq, xs, x, rows);
      routedOutputs(k, layerId, y, xq, xs, routing.expertOffsets(), scratch);
    } else {
      Tensor gathered = scratch.empty(DType.F32, assignments, dim);
      for (int i = 0; i < assignments; i++) gathered.rows(i, i + 1).copyFrom(x.rows(routing.tokenRows()[i], routing.tokenRows()[i] + 1));
      routedOutputs(k, layerId, y, gathered, null, routing.expertOffsets(), scratch);
    }
    k.scatterAdd(out, y, rows, scratch.ofFloats(routing.weights(), assignments));
  }

  /**
   * The unweighted expert outputs {@code y (assignments, dim)} F32 of rows already gathered in routing order
   * ({@code expertOffsets[e] .. expertOffsets[e+1]} are expert e's rows): {@code xRows} I8 with per-row
   * {@code xScales} for A8W8 experts, else F32 (xScales null). Rounded to {@link #outputDType()}, the dtype in
   * which an expert service returns them, so in-process and remote experts give the same bits.
   * For A8W8 each projection of all experts is one grouped call ({@link Kernels#matmulInt8Grouped},
   * bit-identical to a call per expert): at decode batches a layer touches dozens of experts with a few rows
   * each, and a call apiece cost more in hand-offs than the work itself.
   */
  public void routedOutputs(Kernels k, int layerId, Tensor y, Tensor xRows, Tensor xScales, int[] expertOffsets, TensorArena scratch) {
    Mlp[] experts = routedByLayer.get(layerId);
    int numExperts = expertOffsets.length - 1, assignments = expertOffsets[numExperts];
    if (assignments == 0) return;
    Mlp any = null;
    for (int e = 0; e < numExperts; e++) {
      if (expertOffsets[e + 1] == expertOffsets[e]) continue;
      if (experts == null || e >= experts.length || experts[e] == null)
        throw new IllegalStateException("expert " + e + " of layer " + layerId + " is not held by this backend");
      any = experts[e];
    }
    int inter = any.w1().outFeatures();
    if (xScales != null) {
      Tensor offsets = scratch.ofInts(expertOffsets, numExperts + 1);
      Tensor gateUp = scratch.empty(DType.F32, assignments, 2 * inter), gate = gateUp.cols(0, inter);
      if (any.w13() != null) grouped(k, gateUp, xRows, xScales, offsets, experts, expertOffsets, Mlp::w13); // one call
      else {
        grouped(k, gate, xRows, xScales, offsets, experts, expertOffsets, Mlp::w1);
        grouped(k, gateUp.cols(inter, 2 * inter), xRows, xScales, offsets, experts, expertOffsets, Mlp::w3);
      }
      Tensor hq = scratch.empty(DType.I8, assignments, inter), hs = scratch.empty(DType.F32, assignments);
      k.siluMulQuantize(hq, hs, gate, gateUp.cols(inter, 2 * inter));
      grouped(k, y, hq, hs, offsets, experts, expertOffsets, Mlp::w2);
    } else {
      Tensor gate = scratch.empty(DType.F32, assignments, inter);
      Tensor up = scratch.empty(DType.F32, assignments, inter);
      forEachExpert(expertOffsets, (e, from, to) -> {
        experts[e].w1().apply(k, gate.rows(from, to), xRows.rows(from, to), scratch);
        experts[e].w3().apply(k, up.rows(from, to), xRows.rows(from, to), scratch);
      });
      k.siluMul(gate, gate, up);
      forEachExpert(expertOffsets, (e, from, to) -> experts[e].w2().apply(k, y.rows(from, to), gate.rows(from, to), scratch));
    }
    roundToOutput(k, y, scratch);
  }

  /**
   * What an expert service computes for a dispatch: each assignment's expert output {@code (assignments, dim)}
   * in {@link #outputDType()}, in dispatch order — the rows {@link #routed} would have added.
   */
  public Tensor compute(Kernels k, ExpertDispatch d, TensorArena scratch) {
    int n = d.numAssignments(), dim = d.hidden().dim(1);
    Tensor rows = scratch.allocate(d.hidden().dtype(), n, dim);
    Tensor scales = d.scales() == null ? null : scratch.allocate(DType.F32, n);
    for (int i = 0; i < n; i++) {
      int t = d.tokenIndex()[i];
      rows.rows(i, i + 1).copyFrom(d.hidden().rows(t, t + 1));
      if (scales != null) scales.setFloat(i, d.scales().getFloat(t));
    }
    Tensor y = scratch.allocate(DType.F32, n, dim);
    routedOutputs(k, d.layerId(), y, rows, scales, d.expertOffsets(), scratch);
    if (outputDType == DType.F32) return y;
    Tensor out = scratch.allocate(outputDType, n, dim);
    k.convert(out, y);
    return out;
  }

  /** Whether the experts this routing picks in {@code layerId} take INT8 activations (A8W8). */
  public boolean isInt8(int layerId, Routing routing) {
    Mlp[] experts = routedByLayer.get(layerId);
    for (int e = 0; e < routing.numExperts(); e++)
      if (routing.count(e) > 0 && experts != null && e < experts.length && experts[e] != null) return experts[e].w1().isInt8();
    return false;
  }

  /** {@link #outputDType(Precision)} of these experts. */
  public DType outputDType() {
    return outputDType;
  }

  private void roundToOutput(Kernels k, Tensor y, TensorArena scratch) {
    if (outputDType == DType.F32) return;
    Tensor rounded = scratch.empty(outputDType, Math.toIntExact(y.numRows()), y.dim(1));
    k.convert(rounded, y);
    k.convert(y, rounded);
  }

  /** {@code out} = one projection of every expert with rows, on its rows, as one grouped A8W8 call. */
  private static void grouped(Kernels k, Tensor out, Tensor xq, Tensor xs, Tensor offsets, Mlp[] experts, int[] expertOffsets,
      Function<Mlp, Linear> projection) {
    k.matmulInt8Grouped(out, xq, xs, offsets, weights(experts, expertOffsets, projection, true),
        weights(experts, expertOffsets, projection, false));
  }

  /** One projection's INT8 weights (or scales) by expert, null for experts without rows (the grouped op skips them). */
  private static Tensor[] weights(Mlp[] experts, int[] expertOffsets, Function<Mlp, Linear> projection, boolean weight) {
    Tensor[] t = new Tensor[expertOffsets.length - 1];
    for (int e = 0; e < t.length; e++) {
      if (expertOffsets[e + 1] == expertOffsets[e]) continue;
      Linear l = projection.apply(experts[e]);
      if (!l.isInt8()) throw new IllegalStateException("expert " + e + " mixes INT8 and " + l.weight().dtype() + " weights");
      t[e] = weight ? l.weight() : l.scales();
    }
    return t;
  }

  private interface ExpertBlock {
    void run(int expert, int fromRow, int toRow);
  }

  private static void forEachExpert(int[] expertOffsets, ExpertBlock block) {
    for (int e = 0; e + 1 < expertOffsets.length; e++)
      if (expertOffsets[e + 1] > expertOffsets[e]) block.run(e, expertOffsets[e], expertOffsets[e + 1]);
  }

  @Override
  public void shared(Kernels k, int layerId, Tensor out, Tensor x, TensorArena scratch) {
    Mlp shared = sharedByLayer.get(layerId);
    if (shared == null) throw new IllegalStateException("layer " + layerId + " has no shared experts here");
    shared.apply(k, out, x, scratch);
    roundToOutput(k, out, scratch);
  }

  /** {@link #shared} for activations already quantized per row (xq I8 (n, dim), xs F32 (n)): an expert service's input. */
  public void sharedQuantized(Kernels k, int layerId, Tensor out, Tensor xq, Tensor xs, TensorArena scratch) {
    Mlp shared = sharedByLayer.get(layerId);
    if (shared == null) throw new IllegalStateException("layer " + layerId + " has no shared experts here");
    int n = Math.toIntExact(xq.numRows()), inter = shared.w1().outFeatures();
    Tensor gateUp = scratch.empty(DType.F32, n, 2 * inter); // written whole
    if (shared.w13() != null) shared.w13().applyInt8(k, gateUp, xq, xs);
    else {
      shared.w1().applyInt8(k, gateUp.cols(0, inter), xq, xs);
      shared.w3().applyInt8(k, gateUp.cols(inter, 2 * inter), xq, xs);
    }
    shared.down(k, out, gateUp, inter, scratch);
    roundToOutput(k, out, scratch);
  }

  /** Whether the shared experts of {@code layerId} take INT8 activations. */
  public boolean sharedIsInt8(int layerId) {
    Mlp shared = sharedByLayer.get(layerId);
    return shared != null && shared.w1().isInt8();
  }

  /** Bytes of one routed expert of {@code layerId} (all experts of a layer have one shape), 0 if none held. */
  public long routedExpertBytes(int layerId) {
    Mlp[] experts = routedByLayer.get(layerId);
    if (experts == null) return 0;
    for (Mlp e : experts) if (e != null) return e.bytes();
    return 0;
  }

  /** Bytes of the shared experts of {@code layerId}, 0 if none. */
  public long sharedBytes(int layerId) {
    Mlp shared = sharedByLayer.get(layerId);
    return shared == null ? 0 : shared.bytes();
  }

  public boolean hasShared(int layerId) {
    return sharedByLayer.containsKey(layerId);
  }
}
