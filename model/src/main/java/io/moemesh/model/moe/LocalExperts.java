package io.moemesh.model.moe;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.Mlp;
import java.util.Map;

/** Experts computed in this process: expert by expert over the tokens routed to it, then combined in order. */
public final class LocalExperts implements ExpertBackend {
  private final Map<Integer, Mlp[]> routedByLayer; // layerId → experts (null where not held)
  private final Map<Integer, Mlp> sharedByLayer;   // layerId → shared experts (one fused MLP)

  public LocalExperts(Map<Integer, Mlp[]> routedByLayer, Map<Integer, Mlp> sharedByLayer) {
    this.routedByLayer = routedByLayer;
    this.sharedByLayer = sharedByLayer;
  }

  @Override
  public void routed(Kernels k, int layerId, Tensor out, Tensor x, Routing routing, TensorArena scratch) {
    Mlp[] experts = routedByLayer.get(layerId);
    int dim = x.dim(1);
    for (int e = 0; e < routing.numExperts(); e++) {
      int n = routing.count(e);
      if (n == 0) continue;
      if (experts == null || experts[e] == null)
        throw new IllegalStateException("expert " + e + " of layer " + layerId + " is not held by this backend");
      int from = routing.expertOffsets()[e];
      int[] rows = java.util.Arrays.copyOfRange(routing.tokenRows(), from, from + n);
      float[] weights = java.util.Arrays.copyOfRange(routing.weights(), from, from + n);
      Tensor gathered = scratch.allocate(DType.F32, n, dim);
      for (int i = 0; i < n; i++) gathered.rows(i, i + 1).copyFrom(x.rows(rows[i], rows[i] + 1));
      Tensor y = scratch.allocate(DType.F32, n, dim);
      experts[e].apply(k, y, gathered, scratch);
      k.scatterAdd(out, y, scratch.ofInts(rows, n), scratch.ofFloats(weights, n));
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
