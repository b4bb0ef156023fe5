package io.moemesh.model.moe;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.GateParams;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;

/**
 * DeepSeek-V3's MoE feed-forward, as the reference {@code MoE.forward}: the gate picks each token's experts
 * and weights, the routed experts' weighted outputs are summed in ascending expert id, and the shared
 * experts' output is added: {@code ffn(x) = Σ_e w_e · expert_e(x) + shared(x)}. Where the experts run is the
 * {@link ExpertBackend}'s business.
 */
public final class MoeLayer {
  private final int layerId;
  private final Tensor gateWeight; // (nRoutedExperts, dim) F32 or BF16
  private final Tensor bias;       // (nRoutedExperts) F32, e_score_correction_bias; null without noaux_tc
  private final GateParams params;
  private final boolean hasShared;

  public MoeLayer(int layerId, Tensor gateWeight, Tensor bias, GateParams params, boolean hasShared) {
    this.layerId = layerId;
    this.gateWeight = gateWeight;
    this.bias = bias;
    this.params = params;
    this.hasShared = hasShared;
  }

  /** Writes {@code ffn(x (tokens, dim))} into {@code out (tokens, dim)}. */
  public void forward(Kernels k, Tensor out, Tensor x, ExpertBackend experts, TensorArena scratch) {
    start(k, out, x, experts, scratch).finish();
  }

  /**
   * {@link #forward} up to the experts' dispatch: the gate runs now, the experts start
   * ({@link ExpertBackend#start}), and {@code out} is written when the returned work is finished.
   */
  public ExpertBackend.Pending start(Kernels k, Tensor out, Tensor x, ExpertBackend experts, TensorArena scratch) {
    int tokens = Math.toIntExact(x.numRows());
    Routing routing = route(k, x, scratch);
    Tensor routed = scratch.allocate(DType.F32, tokens, x.dim(1));
    Tensor shared = hasShared ? scratch.allocate(DType.F32, tokens, x.dim(1)) : null;
    ExpertBackend.Pending pending = experts.start(k, layerId, routed, shared, x, routing, scratch);
    return () -> {
      pending.finish();
      if (shared == null) out.copyFrom(routed);
      else k.add(out, routed, shared);
    };
  }

  /** The gate: each token's top-k experts and their weights, regrouped by expert. */
  public Routing route(Kernels k, Tensor x, TensorArena scratch) {
    int tokens = Math.toIntExact(x.numRows()), numExperts = gateWeight.dim(0);
    Tensor logits = scratch.empty(DType.F32, tokens, numExperts); // kernel outputs, written whole
    k.matmul(logits, x, gateWeight);
    Tensor ids = scratch.empty(DType.I32, tokens, params.topk());
    Tensor weights = scratch.empty(DType.F32, tokens, params.topk());
    k.moeGate(ids, weights, logits, bias, params);
    return Routing.of(ids, weights, numExperts);
  }

  public int layerId() {
    return layerId;
  }

  public GateParams params() {
    return params;
  }

  public long gateBytes() {
    return gateWeight.numElements() * gateWeight.dtype().byteSize();
  }
}
