package io.moemesh.model;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.RopeTable;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.moe.ExpertBackend;
import io.moemesh.model.moe.MoeLayer;

/**
 * One transformer block, as the reference {@code Block.forward}:
 * {@code x = x + attn(attn_norm(x)); x = x + ffn(ffn_norm(x))}, where ffn is a dense MLP for the first
 * {@code first_k_dense_replace} layers and the MoE after.
 *
 * @param attnNorm F32 (dim): {@code input_layernorm}
 * @param ffnNorm F32 (dim): {@code post_attention_layernorm}
 * @param dense the dense MLP, or null for a MoE layer
 * @param moe the MoE, or null for a dense layer
 */
public record DecoderLayer(Tensor attnNorm, Mla attention, Tensor ffnNorm, Mlp dense, MoeLayer moe) {

  /** Updates the residual stream {@code x (T, dim)} in place. */
  public void forward(Kernels k, Tensor x, ForwardBatch batch, Tensor positions, RopeTable rope, LatentKvCache cache,
      ExpertBackend experts, float eps, TensorArena scratch) {
    start(k, x, batch, positions, rope, cache, experts, eps, scratch).finish();
  }

  /** Only the attention's KV of {@code x (T, dim)}, as {@link #forward} writes it; {@code x} is not changed. */
  public void writeKv(Kernels k, Tensor x, ForwardBatch batch, Tensor positions, RopeTable rope, LatentKvCache cache, float eps,
      TensorArena scratch) {
    Tensor normed = scratch.empty(DType.F32, batch.numRows(), x.dim(1));
    k.rmsNorm(normed, x, attnNorm, eps);
    attention.writeKv(k, normed, batch, positions, rope, cache, scratch);
  }

  /**
   * {@link #forward} up to the experts' dispatch: attention (its KV written to the cache) and the FFN's start;
   * finishing the returned work adds the FFN's output to {@code x}. A dense FFN is computed here, at the start.
   */
  public ExpertBackend.Pending start(Kernels k, Tensor x, ForwardBatch batch, Tensor positions, RopeTable rope, LatentKvCache cache,
      ExpertBackend experts, float eps, TensorArena scratch) {
    int T = batch.numRows(), dim = x.dim(1);
    Tensor normed = scratch.empty(DType.F32, T, dim);
    Tensor delta = scratch.empty(DType.F32, T, dim);
    k.rmsNorm(normed, x, attnNorm, eps);
    attention.forward(k, delta, normed, batch, positions, rope, cache, scratch);
    k.add(x, x, delta);
    k.rmsNorm(normed, x, ffnNorm, eps);
    ExpertBackend.Pending ffn = ExpertBackend.Pending.DONE;
    if (moe != null) ffn = moe.start(k, delta, normed, experts, scratch);
    else dense.apply(k, delta, normed, scratch);
    ExpertBackend.Pending pending = ffn;
    return () -> {
      pending.finish();
      k.add(x, x, delta);
    };
  }
}
