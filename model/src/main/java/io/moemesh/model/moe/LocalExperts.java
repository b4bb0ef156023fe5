package io.moemesh.model.moe;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.Linear;
import io.moemesh.model.Mlp;
import java.util.Map;
import java.util.function.Function;

/** Experts computed in this process, combined in routing order (by expert, never by arrival). */
public final class LocalExperts implements ExpertBackend {
  private final Map<Integer, Mlp[]> routedByLayer; // layerId → experts (null where not held)
  private final Map<Integer, Mlp> sharedByLayer;   // layerId → shared experts (one fused MLP)

  public LocalExperts(Map<Integer, Mlp[]> routedByLayer, Map<Integer, Mlp> sharedByLayer) {
    this.routedByLayer = routedByLayer;
    this.sharedByLayer = sharedByLayer;
  }

  /**
   * All of a layer's routed experts in a few kernel calls: the tokens are gathered (and, for A8W8, quantized)
   * once in routing order, so each expert's tokens are one contiguous block of rows; each expert runs its
   * {@code w1}/{@code w3} over its block; SiLU·mul and the requantization run once over all rows; each expert
   * runs {@code w2}; one scatter-add combines in routing order. Every op is row-independent, so this equals
   * running the experts one by one. For A8W8 each projection of all experts is one grouped call
   * ({@link Kernels#matmulInt8Grouped}, bit-identical to a call per expert): at decode batches a layer touches
   * dozens of experts with a few rows each, and a call apiece cost more in hand-offs than the work itself.
   */
  @Override
  public void routed(Kernels k, int layerId, Tensor out, Tensor x, Routing routing, TensorArena scratch) {
    Mlp[] experts = routedByLayer.get(layerId);
    int assignments = routing.tokenRows().length, dim = x.dim(1);
    if (assignments == 0) return;
    Mlp any = null;
    for (int e = 0; e < routing.numExperts(); e++) {
      if (routing.count(e) == 0) continue;
      if (experts == null || experts[e] == null)
        throw new IllegalStateException("expert " + e + " of layer " + layerId + " is not held by this backend");
      any = experts[e];
    }
    int inter = any.w1().outFeatures();
    boolean int8 = any.w1().isInt8();
    Tensor rows = scratch.ofInts(routing.tokenRows(), assignments);
    Tensor gate = scratch.allocate(DType.F32, assignments, inter);
    Tensor up = scratch.allocate(DType.F32, assignments, inter);
    Tensor y = scratch.allocate(DType.F32, assignments, dim);
    if (int8) {
      Tensor xq = scratch.allocate(DType.I8, assignments, dim), xs = scratch.allocate(DType.F32, assignments);
      k.gatherQuantize(xq, xs, x, rows);
      Tensor offsets = scratch.ofInts(routing.expertOffsets(), routing.numExperts() + 1);
      k.matmulInt8Grouped(gate, xq, xs, offsets, weights(experts, routing, Mlp::w1, true), weights(experts, routing, Mlp::w1, false));
      k.matmulInt8Grouped(up, xq, xs, offsets, weights(experts, routing, Mlp::w3, true), weights(experts, routing, Mlp::w3, false));
      k.siluMul(gate, gate, up);
      Tensor hq = scratch.allocate(DType.I8, assignments, inter), hs = scratch.allocate(DType.F32, assignments);
      k.quantizeRows(hq, hs, gate);
      k.matmulInt8Grouped(y, hq, hs, offsets, weights(experts, routing, Mlp::w2, true), weights(experts, routing, Mlp::w2, false));
    } else {
      Tensor gathered = scratch.allocate(DType.F32, assignments, dim);
      for (int i = 0; i < assignments; i++) gathered.rows(i, i + 1).copyFrom(x.rows(routing.tokenRows()[i], routing.tokenRows()[i] + 1));
      forEachExpert(routing, (e, from, to) -> {
        experts[e].w1().apply(k, gate.rows(from, to), gathered.rows(from, to), scratch);
        experts[e].w3().apply(k, up.rows(from, to), gathered.rows(from, to), scratch);
      });
      k.siluMul(gate, gate, up);
      forEachExpert(routing, (e, from, to) -> experts[e].w2().apply(k, y.rows(from, to), gate.rows(from, to), scratch));
    }
    k.scatterAdd(out, y, rows, scratch.ofFloats(routing.weights(), assignments));
  }

  /** One projection's INT8 weights (or scales) by expert, null for experts without rows (the grouped op skips them). */
  private static Tensor[] weights(Mlp[] experts, Routing routing, Function<Mlp, Linear> projection, boolean weight) {
    Tensor[] t = new Tensor[routing.numExperts()];
    for (int e = 0; e < t.length; e++) {
      if (routing.count(e) == 0) continue;
      Linear l = projection.apply(experts[e]);
      if (!l.isInt8()) throw new IllegalStateException("expert " + e + " mixes INT8 and " + l.weight().dtype() + " weights");
      t[e] = weight ? l.weight() : l.scales();
    }
    return t;
  }

  private interface ExpertBlock {
    void run(int expert, int fromRow, int toRow);
  }

  private static void forEachExpert(Routing routing, ExpertBlock block) {
    for (int e = 0; e < routing.numExperts(); e++) {
      int from = routing.expertOffsets()[e], n = routing.count(e);
      if (n > 0) block.run(e, from, from + n);
    }
  }

  @Override
  public void shared(Kernels k, int layerId, Tensor out, Tensor x, TensorArena scratch) {
    Mlp shared = sharedByLayer.get(layerId);
    if (shared == null) throw new IllegalStateException("layer " + layerId + " has no shared experts here");
    shared.apply(k, out, x, scratch);
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
