package io.moemesh.model;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
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
  public void forward(Tensor x, ForwardContext ctx) {
    start(x, ctx).finish();
  }

  /** Only the attention's KV of {@code x (T, dim)}, as {@link #forward} writes it; {@code x} is not changed. */
  public void writeKv(Tensor x, ForwardContext ctx) {
    Tensor normed = ctx.scratch().empty(DType.F32, ctx.batch().numRows(), x.dim(1));
    ctx.kernels().rmsNorm(normed, x, attnNorm, ctx.eps());
    attention.writeKv(normed, ctx);
  }

  /**
   * {@link #forward} up to the experts' dispatch: attention (its KV written to the cache) and the FFN's start;
   * finishing the returned work adds the FFN's output to {@code x}. A dense FFN is computed here, at the start.
   */
  public ExpertBackend.Pending start(Tensor x, ForwardContext ctx) {
    Kernels k = ctx.kernels();
    TensorArena scratch = ctx.scratch();
    float eps = ctx.eps();
    int T = ctx.batch().numRows(), dim = x.dim(1);
    Tensor normed = scratch.empty(DType.F32, T, dim);
    Tensor delta = scratch.empty(DType.F32, T, dim);
    k.rmsNorm(normed, x, attnNorm, eps);
    attention.forward(delta, normed, ctx);
    k.add(x, x, delta);
    k.rmsNorm(normed, x, ffnNorm, eps);
    ExpertBackend.Pending ffn = ExpertBackend.Pending.DONE;
    if (moe != null) ffn = moe.start(k, delta, normed, ctx.experts(), scratch);
    else dense.apply(k, delta, normed, scratch);
    ExpertBackend.Pending pending = ffn;
    return () -> {
      pending.finish();
      k.add(x, x, delta);
    };
  }
}
