package io.moemesh.model;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;

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
   * Draft logits {@code (rows of batch.logitRows(), vocab)}. The context's {@code batch.tokens()} holds the next tokens
   * {@code t_{i+1}}, {@code batch.positions()} the positions i; {@code hidden (T, dim)} the main model's h_i.
   */
  public Tensor forward(Tensor hidden, ForwardContext ctx) {
    return draft(hidden, ctx).logits();
  }

  /**
   * What one pass of the module gives a speculative decoder.
   *
   * @param hidden (rows of batch.logitRows(), dim) the block's output before the shared head's norm, for the logit rows
   *     in their order: the h_i a chained pass of the module takes at position i + 1 (as vLLM's MTP proposer chains one
   *     module)
   * @param logits (rows of batch.logitRows(), draft vocabulary) draft logits over token ids [0, draft vocabulary)
   */
  public record Output(Tensor hidden, Tensor logits) {}

  /**
   * As {@link #forward}, also returning the logit rows' block outputs for a chained pass. Every row writes its KV, but
   * only the logit rows run the whole block and the head: the others' outputs are never read (a speculative step drafts
   * from each chunk's last row), only their KV, which the block's attention computes from its input alone. So those rows
   * cost their input projection and the KV down-projection; their KV and the logit rows' numbers are the bits a pass of
   * the whole block over every row gives.
   */
  public Output draft(Tensor hidden, ForwardContext ctx) {
    return draft(hidden, head.outFeatures(), ctx);
  }

  /**
   * As {@link #draft(Tensor, ForwardContext)},
   * with logits for the first {@code vocabulary} token ids only: the head reads that share of its rows (FR-Spec, Zhao
   * et al. 2025: byte-level BPE numbers tokens in merge order, so the first ids are the most frequent ones).
   */
  public Output draft(Tensor hidden, int vocabulary, ForwardContext ctx) {
    Kernels k = ctx.kernels();
    ForwardBatch batch = ctx.batch();
    TensorArena scratch = ctx.scratch();
    float eps = ctx.eps();
    Linear head = this.head.firstOutputs(vocabulary);
    int T = batch.numRows(), dim = hidden.dim(1);
    Tensor emb = DeepseekModel.embed(k, embed, batch.tokens(), scratch);
    Tensor joined = scratch.allocate(DType.F32, T, 2 * dim);
    k.rmsNorm(joined.cols(0, dim), emb, enorm, eps);
    k.rmsNorm(joined.cols(dim, 2 * dim), hidden, hnorm, eps);
    Tensor x = scratch.allocate(DType.F32, T, dim);
    ehProj.apply(k, x, joined, scratch);
    int[] wanted = batch.logitRows();
    if (isEveryRowInOrder(wanted, T)) {
      block.forward(x, ctx);
      return new Output(x, DeepseekModel.logits(k, x, wanted, shareHeadNorm, head, eps, scratch).logits());
    }
    int[] sorted = java.util.Arrays.stream(wanted).sorted().distinct().toArray();
    int[] others = java.util.stream.IntStream.range(0, T).filter(r -> java.util.Arrays.binarySearch(sorted, r) < 0).toArray();
    if (others.length > 0) { // first: the logit rows attend over them
      ForwardBatch kvOnly = batch.rows(others);
      Tensor kvRows = gather(x, others, scratch);
      block.writeKv(kvRows, ctx.over(kvOnly));
    }
    if (sorted.length == 0) return new Output(scratch.empty(DType.F32, 0, dim), scratch.empty(DType.F32, 0, head.outFeatures()));
    ForwardBatch last = batch.rows(sorted);
    Tensor xs = gather(x, sorted, scratch);
    block.forward(xs, ctx.over(last));
    int[] order = new int[wanted.length]; // the logit rows in the batch's order, as rows of xs
    for (int i = 0; i < wanted.length; i++) order[i] = java.util.Arrays.binarySearch(sorted, wanted[i]);
    if (!isEveryRowInOrder(order, sorted.length)) xs = gather(xs, order, scratch);
    return new Output(xs, DeepseekModel.logits(k, xs, order.length == 0 ? order : range(order.length), shareHeadNorm, head, eps, scratch).logits());
  }

  private static boolean isEveryRowInOrder(int[] rows, int n) {
    if (rows.length != n) return false;
    for (int i = 0; i < n; i++) if (rows[i] != i) return false;
    return true;
  }

  private static int[] range(int n) {
    return java.util.stream.IntStream.range(0, n).toArray();
  }

  /** Rows {@code rows} of {@code x}, in that order, as a tensor of their own. */
  private static Tensor gather(Tensor x, int[] rows, TensorArena scratch) {
    Tensor out = scratch.allocate(x.dtype(), rows.length, x.dim(1));
    for (int i = 0; i < rows.length; i++) out.rows(i, i + 1).copyFrom(x.rows(rows[i], rows[i] + 1));
    return out;
  }
}
