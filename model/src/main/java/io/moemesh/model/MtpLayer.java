package io.moemesh.model;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.RopeTable;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.moe.ExpertBackend;

/**
 * A multi-token-prediction module (DeepSeek-V3 §2.2), used as the draft model of speculative decoding: at
 * position i it combines the main model's final hidden state {@code h_i} with the embedding of the next token
 * {@code t_{i+1}} and predicts {@code t_{i+2}}:
 * <pre>
 *   h' = eh_proj([enorm(emb(t_{i+1})) ; hnorm(h_i)]);  h' = block(h');  logits = head(norm(h'))
 * </pre>
 * The concatenation puts the embedding first, as vLLM and SGLang load DeepSeek-V3's {@code eh_proj} (the
 * paper writes the hidden state first; the released weights follow the frameworks). {@code h_i} is the main
 * model's hidden state after its final norm, as both frameworks feed it.
 *
 * @param embed (vocab, dim) token embedding (the MTP layer's own, or the main model's)
 * @param enorm F32 (dim)
 * @param hnorm F32 (dim)
 * @param ehProj (dim, 2 · dim)
 * @param shareHeadNorm F32 (dim)
 * @param head (vocab, dim)
 */
public record MtpLayer(Tensor embed, Tensor enorm, Tensor hnorm, Linear ehProj, DecoderLayer block, Tensor shareHeadNorm,
    Linear head) {

  /**
   * Draft logits {@code (rows of batch.logitRows(), vocab)}. {@code batch.tokens()} holds the next tokens
   * {@code t_{i+1}}, {@code batch.positions()} the positions i; {@code hidden (T, dim)} the main model's h_i.
   */
  public Tensor forward(Kernels k, ForwardBatch batch, Tensor hidden, Tensor positions, RopeTable rope, LatentKvCache cache,
      ExpertBackend experts, float eps, TensorArena scratch) {
    return draft(k, batch, hidden, positions, rope, cache, experts, eps, scratch).logits();
  }

  /**
   * What one pass of the module gives a speculative decoder.
   *
   * @param hidden (T, dim) the block's output before the shared head's norm: the h_i a chained pass of the module
   *     takes at position i + 1 (as vLLM's MTP proposer chains one module)
   * @param logits (rows of batch.logitRows(), vocab) draft logits
   */
  public record Output(Tensor hidden, Tensor logits) {}

  /** As {@link #forward}, also returning the block's output hidden states for a chained pass. */
  public Output draft(Kernels k, ForwardBatch batch, Tensor hidden, Tensor positions, RopeTable rope, LatentKvCache cache,
      ExpertBackend experts, float eps, TensorArena scratch) {
    int T = batch.numRows(), dim = hidden.dim(1);
    Tensor emb = DeepseekModel.embed(k, embed, batch.tokens(), scratch);
    Tensor joined = scratch.allocate(DType.F32, T, 2 * dim);
    k.rmsNorm(joined.cols(0, dim), emb, enorm, eps);
    k.rmsNorm(joined.cols(dim, 2 * dim), hidden, hnorm, eps);
    Tensor x = scratch.allocate(DType.F32, T, dim);
    ehProj.apply(k, x, joined, scratch);
    block.forward(k, x, batch, positions, rope, cache, experts, eps, scratch);
    return new Output(x, DeepseekModel.logits(k, x, batch.logitRows(), shareHeadNorm, head, eps, scratch).logits());
  }
}
