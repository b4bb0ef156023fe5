package io.moemesh.model;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.PagedLatentKv;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import java.util.ArrayList;
import java.util.List;

/**
 * Multi-head latent attention (DeepSeek-V2/V3), as in DeepSeek's reference {@code MLA.forward}:
 * <pre>
 *   q            = wq_b(q_norm(wq_a(x)))                     (T, heads, nope + rope)   [or wq(x)]
 *   c_kv ‖ k_pe  = wkv_a(x);  c_kv = kv_norm(c_kv)           (T, kv_lora_rank ‖ rope)  → latent cache
 *   q_pe, k_pe   = rope(q_pe), rope(k_pe)
 *   naive:    k = [wkv_b(c_kv)_nope ‖ k_pe],  v = wkv_b(c_kv)_v,  o = softmax(q·k · scale) v
 *   absorbed: q_lat = q_nope · W_UK,  o_lat = softmax((q_lat·c_kv + q_pe·k_pe) · scale) c_kv,  o = o_lat · W_UVᵀ
 *   out          = wo(o)
 * </pre>
 * Both forms read keys from the latent cache (after its BF16 rounding), so a token's numbers do not depend on
 * whether its context was computed in this pass or an earlier one.
 */
public final class Mla {
  private final ModelConfig c;
  private final int layerId; // index into the KV cache
  private final Linear wq;    // (heads * qkHeadDim, dim), when q_lora_rank is 0
  private final Linear wqA;   // (qLoraRank, dim)
  private final Tensor qNorm; // (qLoraRank) F32
  private final Linear wqB;   // (heads * qkHeadDim, qLoraRank)
  private final Linear wkvA;  // (kvLoraRank + rope, dim)
  private final Linear wqkvA; // (qLoraRank + kvLoraRank + rope, dim): wqA's rows then wkvA's, both views of it; or null
  private final Tensor kvNorm; // (kvLoraRank) F32
  private final Linear wkvB;  // (heads * (nope + v), kvLoraRank)
  private final Tensor wUk;   // (heads, nope, kvLoraRank): W_UK per head, for q absorption; or its HeadsKmPairs (rank 4)
  private final Tensor wUv;   // (heads, v, kvLoraRank): W_UV per head, for the output
  private final Linear wo;    // (dim, heads * v)
  private final DType queryDType; // of the absorbed attention's operands: BF16 in int8 precision, else F32

  public Mla(ModelConfig c, int layerId, Linear wq, Linear wqA, Tensor qNorm, Linear wqB, Linear wkvA, Linear wqkvA,
      Tensor kvNorm, Linear wkvB, Tensor wUk, Tensor wUv, Linear wo, DType queryDType) {
    this.c = c;
    this.queryDType = queryDType;
    this.layerId = layerId;
    this.wq = wq;
    this.wqA = wqA;
    this.qNorm = qNorm;
    this.wqB = wqB;
    this.wkvA = wkvA;
    this.wqkvA = wqkvA;
    this.kvNorm = kvNorm;
    this.wkvB = wkvB;
    this.wUk = wUk;
    this.wUv = wUv;
    this.wo = wo;
  }

  /**
   * The dtype of the absorbed attention's operands: BF16 in {@code int8} precision (A8W8 with a BF16 cache, the
   * absorbed form as FlashMLA runs it: q_nope · W_UK, the scores against the cache, the softmax weights on the values
   * and o · W_UV all take BF16 operands, every product exact, summed in F32), F32 in {@code exact} and {@code bf16},
   * whose contract is F32 compute.
   */
  public static DType queryDType(Precision precision) {
    return precision == Precision.INT8 ? DType.BF16 : DType.F32;
  }

  /** Attention output {@code out (T, dim)} for the normed input {@code x (T, dim)}; writes the batch's KV. */
  public void forward(Tensor out, Tensor x, ForwardContext ctx) {
    Kernels k = ctx.kernels();
    ForwardBatch batch = ctx.batch();
    LatentKvCache cache = ctx.cache();
    TensorArena scratch = ctx.scratch();
    int T = batch.numRows(), heads = c.numAttentionHeads(), qk = c.qkHeadDim(), nope = c.qkNopeHeadDim();
    int rank = c.kvLoraRank(), ropeDim = c.qkRopeHeadDim();

    Tensor q = scratch.empty(DType.F32, T, heads, qk);
    Tensor q2 = q.reshape(T, heads * qk), kv = null;
    if (wq != null) {
      wq.apply(k, q2, x, scratch);
    } else {
      int qLora = c.qLoraRank();
      Tensor qa;
      if (wqkvA != null) { // both down-projections in one call
        Tensor qkvA = scratch.empty(DType.F32, T, qLora + rank + ropeDim);
        wqkvA.apply(k, qkvA, x, scratch);
        qa = qkvA.cols(0, qLora);
        kv = qkvA.cols(qLora, qLora + rank + ropeDim);
      } else {
        qa = scratch.empty(DType.F32, T, qLora);
        wqA.apply(k, qa, x, scratch);
      }
      k.rmsNorm(qa, qa, qNorm, c.rmsNormEps());
      wqB.apply(k, q2, qa, scratch);
    }
    Tensor qPe = q.cols(nope, qk); // (T, heads, rope)
    k.rope(qPe, ctx.positions(), ctx.rope());

    if (kv == null) {
      kv = scratch.empty(DType.F32, T, rank + ropeDim);
      wkvA.apply(k, kv, x, scratch);
    }
    writeLatent(kv, ctx);

    Tensor o = scratch.empty(DType.F32, T, heads * c.vHeadDim()); // every row is a prompt row or a decode row
    List<Rows> decodeRows = new ArrayList<>();
    for (ForwardBatch.SequenceChunk s : batch.sequences()) {
      int start = batch.positions()[s.firstRow()];
      int promptRows = Math.clamp(s.numPromptTokens() - start, 0, s.numRows());
      if (promptRows > 0) naive(k, o, q, batch, s.firstRow(), promptRows, s.blockTable(), cache, scratch);
      if (promptRows < s.numRows()) decodeRows.add(new Rows(s.firstRow() + promptRows, s.numRows() - promptRows, s.blockTable()));
    }
    if (!decodeRows.isEmpty()) absorbed(k, o, q, batch, decodeRows, cache, scratch);
    wo.apply(k, out, o, scratch);
  }

  /**
   * Only the batch's KV, for the normed input {@code x (T, dim)}: what {@link #forward} writes, bit for bit (the KV
   * down-projection's rows are its own whatever else is computed beside them), without the queries or the attention.
   * For rows whose output nobody reads, only whose KV later rows attend over (an MTP pass's rows before its last).
   */
  public void writeKv(Tensor x, ForwardContext ctx) {
    Tensor kv = ctx.scratch().empty(DType.F32, ctx.batch().numRows(), c.kvLoraRank() + c.qkRopeHeadDim());
    wkvA.apply(ctx.kernels(), kv, x, ctx.scratch());
    writeLatent(kv, ctx);
  }

  /** {@code kv_norm(c_kv) ‖ rope(k_pe)} of {@code kv (T, rank + rope)} into the cache at the batch's positions. */
  private void writeLatent(Tensor kv, ForwardContext ctx) {
    Kernels k = ctx.kernels();
    int rank = c.kvLoraRank(), ropeDim = c.qkRopeHeadDim();
    Tensor latent = ctx.scratch().empty(DType.F32, ctx.batch().numRows(), rank + ropeDim); // both parts written below
    k.rmsNorm(latent.cols(0, rank), kv.cols(0, rank), kvNorm, c.rmsNormEps());
    latent.cols(rank, rank + ropeDim).copyFrom(kv.cols(rank, rank + ropeDim));
    k.rope(latent.cols(rank, rank + ropeDim), ctx.positions(), ctx.rope());
    ctx.cache().write(k, layerId, ctx.batch(), latent, ctx.scratch());
  }

  /** Rows {@code [first, first + n)} of one sequence whose KV pages are {@code blockTable}. */
  private record Rows(int first, int n, int[] blockTable) {}

  /** Rows {@code [first, first + n)} of one sequence, attending over keys expanded from the latent cache. */
  private void naive(Kernels k, Tensor o, Tensor q, ForwardBatch batch, int first, int n, int[] blockTable,
      LatentKvCache cache, TensorArena scratch) {
    int heads = c.numAttentionHeads(), nope = c.qkNopeHeadDim(), qk = c.qkHeadDim(), vDim = c.vHeadDim();
    int rank = c.kvLoraRank(), ropeDim = c.qkRopeHeadDim();
    int context = batch.positions()[first + n - 1] + 1;
    // each written whole below, so not zeroed first (zeroing them was a fifth of a prompt step's Java)
    Tensor latent = scratch.empty(DType.F32, context, rank + ropeDim);
    cache.read(k, layerId, blockTable, context, latent);
    Tensor kvB = scratch.empty(DType.F32, context, heads, nope + vDim);
    wkvB.apply(k, kvB.reshape(context, heads * (nope + vDim)), latent.cols(0, rank), scratch);
    Tensor keys = scratch.empty(DType.F32, context, heads, qk);
    for (int h = 0; h < heads; h++) {
      Tensor key = keys.reshape(context, heads * qk).cols(h * qk, (h + 1) * qk);
      key.cols(0, nope).copyFrom(kvB.reshape(context, heads * (nope + vDim)).cols(h * (nope + vDim), h * (nope + vDim) + nope));
      key.cols(nope, qk).copyFrom(latent.cols(rank, rank + ropeDim));
    }
    int[] lens = new int[n];
    for (int i = 0; i < n; i++) lens[i] = batch.positions()[first + i] + 1;
    Tensor out = o.rows(first, first + n).reshape(n, heads, vDim);
    k.attention(out, q.rows(first, first + n), keys, kvB.cols(nope, nope + vDim), scratch.ofInts(lens, n), c.softmaxScale());
  }

  /**
   * Every decode-form row of the batch at once, in the absorbed form over the paged latent cache: the
   * per-head absorptions are one matmulHeads call over all rows and heads, and one attention call covers every sequence (each
   * row with its own block table), so a decode step of many requests costs a few kernel calls per layer.
   */
  private void absorbed(Kernels k, Tensor o, Tensor q, ForwardBatch batch, List<Rows> segments, LatentKvCache cache,
      TensorArena scratch) {
    int heads = c.numAttentionHeads(), nope = c.qkNopeHeadDim(), qk = c.qkHeadDim(), vDim = c.vHeadDim();
    int rank = c.kvLoraRank();
    int n = 0, maxPages = 0;
    boolean contiguous = true;
    for (Rows s : segments) {
      contiguous &= s.first() == segments.getFirst().first() + n;
      n += s.n();
      maxPages = Math.max(maxPages, s.blockTable().length);
    }
    int first = segments.getFirst().first();
    Tensor qRows = contiguous ? q.rows(first, first + n) : scratch.allocate(DType.F32, n, heads, qk); // (n, heads, qk)
    Tensor oRows = contiguous ? o.rows(first, first + n) : scratch.allocate(DType.F32, n, heads * vDim);
    int[] lens = new int[n];
    int[] table = new int[n * maxPages]; // a row's pages, padded with page 0 past its context
    for (int i = 0, r = 0; i < segments.size(); i++) {
      Rows s = segments.get(i);
      if (!contiguous) qRows.rows(r, r + s.n()).copyFrom(q.rows(s.first(), s.first() + s.n()));
      for (int j = 0; j < s.n(); j++, r++) {
        lens[r] = batch.positions()[s.first() + j] + 1;
        System.arraycopy(s.blockTable(), 0, table, r * maxPages, s.blockTable().length);
      }
    }
    Tensor qLatent = scratch.empty(DType.F32, n, heads, rank);
    Tensor oLatent = scratch.empty(DType.F32, n, heads, rank);
    Tensor qNope = inQueryDType(k, qRows.cols(0, nope), scratch);
    if (wUk.rank() == 4) k.matmulHeadsKmPairs(qLatent, qNope, wUk); // q_nope · W_UK, from its pairs
    else k.matmulHeadsKm(qLatent, qNope, wUk); // q_nope · W_UK, W_UK as it lies
    var kv = new PagedLatentKv(cache.pages(layerId), scratch.ofInts(table, n, maxPages), scratch.ofInts(lens, n));
    k.mlaDecode(oLatent, inQueryDType(k, qLatent, scratch), inQueryDType(k, qRows.cols(nope, qk), scratch), kv,
        c.softmaxScale());
    k.matmulHeads(oRows.reshape(n, heads, vDim), inQueryDType(k, oLatent, scratch), wUv);
    if (contiguous) return;
    for (int i = 0, r = 0; i < segments.size(); r += segments.get(i).n(), i++) {
      Rows s = segments.get(i);
      o.rows(s.first(), s.first() + s.n()).copyFrom(oRows.rows(r, r + s.n()));
    }
  }

  /** x (n, heads, d) as the absorbed attention takes it: itself, or a BF16 copy (see {@link #queryDType}). */
  private Tensor inQueryDType(Kernels k, Tensor x, TensorArena scratch) {
    if (queryDType == x.dtype()) return x;
    Tensor converted = scratch.empty(queryDType, x.dim(0), x.dim(1), x.dim(2));
    k.convert(converted, x);
    return converted;
  }

  /**
   * Bytes of the weights a decode row reads: the projections and the absorbed W_UK, W_UV. Not W_KV_B: only prompt
   * rows expand keys and values through it.
   */
  public long decodeWeightBytes() {
    long bytes = wkvA.bytes() + wo.bytes() + (wq != null ? wq.bytes() : wqA.bytes() + wqB.bytes());
    return bytes + wUk.numElements() * wUk.dtype().byteSize() + wUv.numElements() * wUv.dtype().byteSize();
  }
}
