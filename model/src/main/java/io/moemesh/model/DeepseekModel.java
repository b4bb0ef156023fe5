package io.moemesh.model;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.RopeTable;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.checkpoint.Checkpoint;
import io.moemesh.model.moe.ExpertBackend;
import io.moemesh.model.moe.ExpertSelection;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * A DeepSeek-V3-architecture model, as the reference {@code Transformer.forward}:
 * {@code h = embed(tokens); for each block: h = block(h); logits = head(norm(h))}, over a batch of rows of
 * several sequences ({@link ForwardBatch}) with a paged latent KV cache. Immutable after loading (weights
 * live in the model's arena until {@link #close()}); per-sequence state is the cache's and the caller's.
 */
public final class DeepseekModel implements AutoCloseable {
  private final ModelConfig config;
  private final Precision precision;
  private final Kernels kernels;
  private final TensorArena weights;
  private final Tensor embed;        // (vocab, dim) BF16 or F32
  private final DecoderLayer[] layers;
  private final Tensor norm;         // F32 (dim)
  private final Linear head;         // (vocab, dim), BF16 or F32
  private final MtpLayer[] mtp;
  private volatile int draftVocabulary; // the MTP head's drafts cover token ids [0, draftVocabulary)
  private final RopeTable rope;      // (max_position_embeddings, rope / 2)
  private final LocalExperts localExperts;
  private final Path directory;

  private DeepseekModel(Path directory, ModelConfig config, Precision precision, Kernels kernels, TensorArena weights, Tensor embed,
      DecoderLayer[] layers, Tensor norm, Linear head, MtpLayer[] mtp, RopeTable rope, LocalExperts localExperts) {
    this.config = config;
    this.precision = precision;
    this.kernels = kernels;
    this.weights = weights;
    this.embed = embed;
    this.layers = layers;
    this.norm = norm;
    this.head = head;
    this.mtp = mtp;
    this.draftVocabulary = config.vocabSize();
    this.rope = rope;
    this.localExperts = localExperts;
    this.directory = directory;
  }

  /** Loads {@code dir} (config.json + safetensors) in {@code precision}, reporting progress as it reads. */
  public static DeepseekModel load(Path dir, Precision precision, Kernels kernels, LoadProgress progress) {
    return load(dir, precision, kernels, ExpertSelection.ALL, progress);
  }

  /** As {@link #load(Path, Precision, Kernels, LoadProgress)}, loading only the experts in {@code selection}. */
  public static DeepseekModel load(Path dir, Precision precision, Kernels kernels, ExpertSelection selection, LoadProgress progress) {
    ModelConfig config = ModelConfigReader.read(dir.resolve("config.json"));
    TensorArena arena = TensorArena.forModel();
    try (Checkpoint checkpoint = Checkpoint.open(dir)) {
      var loader = new ModelLoader(config, new WeightLoader(checkpoint, config, precision, kernels, arena, progress), precision, selection);
      Map<Integer, Mlp[]> routed = new HashMap<>();
      Map<Integer, Mlp> shared = new HashMap<>();
      int L = config.numHiddenLayers();
      Tensor embed = loader.embedding("model.embed_tokens.weight");
      DecoderLayer[] layers = new DecoderLayer[L];
      for (int i = 0; i < L; i++) layers[i] = loader.block(i, i, routed, shared);
      Linear head = loader.head("lm_head.weight");
      MtpLayer[] mtp = new MtpLayer[config.numNextnPredictLayers()];
      for (int j = 0; j < mtp.length; j++) mtp[j] = loader.mtp(L + j, L + j, embed, head, routed, shared);
      return new DeepseekModel(dir, config, precision, kernels, arena, embed, layers, loader.norm("model.norm.weight"),
          head, mtp, YarnRope.table(arena, config), new LocalExperts(routed, shared, precision));
    } catch (RuntimeException e) {
      arena.close();
      throw e;
    }
  }

  /** The hidden states after the final norm and the logits of the batch's {@code logitRows}. */
  public record Output(Tensor hidden, Tensor logits) {}

  /** Told after each decoder layer of a forward pass, once that layer's KV of the batch is in the cache. */
  @FunctionalInterface
  public interface LayerObserver {
    LayerObserver NONE = layerId -> {};

    void afterLayer(int layerId);
  }

  /** Runs the main model over {@code batch}, writing its KV; results live in {@code scratch}. */
  public Output forward(ForwardBatch batch, LatentKvCache cache, ExpertBackend experts, TensorArena scratch) {
    return forward(batch, cache, experts, LayerObserver.NONE, scratch);
  }

  /** As {@link #forward(ForwardBatch, LatentKvCache, ExpertBackend, TensorArena)}, telling {@code observer} as each layer's KV lands (layer-wise KV transfer). */
  public Output forward(ForwardBatch batch, LatentKvCache cache, ExpertBackend experts, LayerObserver observer, TensorArena scratch) {
    checkPages(batch, cache);
    ForwardContext ctx = ForwardContext.of(kernels, batch, rope, cache, experts, config.rmsNormEps(), scratch);
    Tensor h = embed(kernels, embed, batch.tokens(), scratch);
    for (int i = 0; i < layers.length; i++) {
      long mark = scratch.mark(); // a layer's temporaries die with it; h lives on
      layers[i].forward(h, ctx);
      scratch.release(mark);
      observer.afterLayer(i);
    }
    return logits(kernels, h, batch.logitRows(), norm, head, config.rmsNormEps(), scratch);
  }

  /**
   * How a forward pass splits into two micro-batches: rows {@code [0, splitRow)} and {@code [splitRow, numRows)},
   * whole sequence chunks each (e.g. at {@link ForwardBatch#microBatchSplit()}).
   *
   * @param secondScratch where the second micro-batch's per-layer temporaries live (a workspace the caller
   *     rewinds with the pass's own); the first micro-batch's, and the results, live in the pass's scratch
   */
  public record MicroBatches(int splitRow, TensorArena secondScratch) {}

  /**
   * As {@link #forward(ForwardBatch, LatentKvCache, ExpertBackend, LayerObserver, TensorArena)}, in two
   * micro-batches whose layers interleave (DeepSeek's dual micro-batch overlap), so each one's wait on its
   * experts hides behind the other's attention:
   * <pre>
   *   attn₀(0) dispatch₀(0) │ attn₁(i) dispatch₁(i)  combine₀(i)  attn₀(i+1) dispatch₀(i+1)  combine₁(i) │ …
   * </pre>
   * Every kernel is row-independent and batch-invariant and a chunk's attention sees only its own sequence, so
   * the outputs are bit-identical to the single-batch pass. Each micro-batch releases its own temporaries per
   * layer, in its own arena. If anything fails, the experts still at work are waited for before it is rethrown.
   */
  public Output forward(ForwardBatch batch, LatentKvCache cache, ExpertBackend experts, LayerObserver observer, TensorArena scratch,
      MicroBatches micro) {
    int rows = batch.numRows(), split = micro.splitRow();
    if (split <= 0 || split >= rows) throw new IllegalArgumentException("micro-batch split at row " + split + " of a batch of " + rows);
    checkPages(batch, cache);
    ForwardBatch[] part = {batch.slice(0, split), batch.slice(split, rows)};
    TensorArena[] arena = {scratch, micro.secondScratch()};
    Tensor h = embed(kernels, embed, batch.tokens(), scratch);
    Tensor[] x = {h.rows(0, split), h.rows(split, rows)};
    float eps = config.rmsNormEps();
    // each micro-batch's positions in the pass's scratch, its temporaries in its own arena
    Tensor[] positions = {scratch.ofInts(part[0].positions(), split), scratch.ofInts(part[1].positions(), rows - split)};
    ForwardContext[] ctx = {
        new ForwardContext(kernels, part[0], positions[0], rope, cache, experts, eps, arena[0]),
        new ForwardContext(kernels, part[1], positions[1], rope, cache, experts, eps, arena[1])};
    long[] mark = new long[2];
    ExpertBackend.Pending[] pending = new ExpertBackend.Pending[2];
    try {
      mark[0] = arena[0].mark();
      pending[0] = layers[0].start(x[0], ctx[0]);
      for (int i = 0; i < layers.length; i++) {
        mark[1] = arena[1].mark();
        pending[1] = layers[i].start(x[1], ctx[1]);
        finish(pending, 0);
        arena[0].release(mark[0]);
        if (i + 1 < layers.length) {
          mark[0] = arena[0].mark();
          pending[0] = layers[i + 1].start(x[0], ctx[0]);
        }
        finish(pending, 1);
        arena[1].release(mark[1]);
        observer.afterLayer(i);
      }
    } catch (RuntimeException | Error e) {
      for (int m = 0; m < pending.length; m++) {
        try {
          if (pending[m] != null) finish(pending, m);
        } catch (RuntimeException | Error also) {
          e.addSuppressed(also);
        }
      }
      throw e;
    }
    return logits(kernels, h, batch.logitRows(), norm, head, eps, scratch);
  }

  /** Finishes micro-batch {@code m}'s work, and forgets it first, so a failed finish is never repeated. */
  private static void finish(ExpertBackend.Pending[] pending, int m) {
    ExpertBackend.Pending p = pending[m];
    pending[m] = null;
    p.finish();
  }

  /** {@link #forward(ForwardBatch, LatentKvCache, ExpertBackend, TensorArena)} with the experts in this process. */
  public Output forward(ForwardBatch batch, LatentKvCache cache, TensorArena scratch) {
    return forward(batch, cache, localExperts, scratch);
  }

  /** Draft logits of MTP module {@code depth} (0-based); see {@link MtpLayer#forward}. */
  public Tensor forwardMtp(int depth, ForwardBatch batch, Tensor hidden, LatentKvCache cache, ExpertBackend experts, TensorArena scratch) {
    if (depth < 0 || depth >= mtp.length)
      throw new IllegalArgumentException("MTP depth " + depth + " but the model has " + mtp.length + " MTP layer(s)");
    checkPages(batch, cache);
    return mtp[depth].forward(hidden, ForwardContext.of(kernels, batch, rope, cache, experts, config.rmsNormEps(), scratch));
  }

  /**
   * As {@link #forwardMtp(int, ForwardBatch, Tensor, LatentKvCache, ExpertBackend, TensorArena)}, also returning the
   * module's output hidden states (before its head's norm), which a chained pass at the next position takes as its h.
   */
  public MtpLayer.Output draftMtp(int depth, ForwardBatch batch, Tensor hidden, LatentKvCache cache, ExpertBackend experts, TensorArena scratch) {
    if (depth < 0 || depth >= mtp.length)
      throw new IllegalArgumentException("MTP depth " + depth + " but the model has " + mtp.length + " MTP layer(s)");
    checkPages(batch, cache);
    return mtp[depth].draft(hidden, draftVocabulary, ForwardContext.of(kernels, batch, rope, cache, experts, config.rmsNormEps(), scratch));
  }

  public Tensor forwardMtp(int depth, ForwardBatch batch, Tensor hidden, LatentKvCache cache, TensorArena scratch) {
    return forwardMtp(depth, batch, hidden, cache, localExperts, scratch);
  }

  /** A KV cache with room for {@code numPages} pages of {@code pageSize} tokens in every layer (MTP included). */
  public LatentKvCache newCache(TensorArena arena, int numPages, int pageSize) {
    return LatentKvCache.allocate(arena, config, precision.kvCacheDType(), layers.length + mtp.length, numPages, pageSize);
  }

  /** Bytes one token's latent KV takes in a cache from {@link #newCache} (every layer, MTP included). */
  public long newCacheBytesPerToken() {
    return (long) (layers.length + mtp.length) * config.latentDim() * precision.kvCacheDType().byteSize();
  }

  /** Every position a chunk writes or reads has a page, and every page exists: checked before anything is written. */
  private void checkPages(ForwardBatch batch, LatentKvCache cache) {
    if (cache.numLayers() < layers.length + mtp.length)
      throw new IllegalArgumentException("KV cache has " + cache.numLayers() + " layers, the model needs " + (layers.length + mtp.length));
    for (ForwardBatch.SequenceChunk s : batch.sequences()) {
      int last = batch.positions()[s.firstRow() + s.numRows() - 1];
      if (batch.positions()[s.firstRow()] < 0) throw new IllegalArgumentException("negative position at row " + s.firstRow());
      int pagesNeeded = last / cache.pageSize() + 1;
      if (s.blockTable().length < pagesNeeded)
        throw new IllegalArgumentException("rows from " + s.firstRow() + " reach position " + last + " but their block table has "
            + s.blockTable().length + " page(s) of " + cache.pageSize());
      for (int i = 0; i < pagesNeeded; i++)
        if (s.blockTable()[i] < 0 || s.blockTable()[i] >= cache.numPages())
          throw new IllegalArgumentException("page id " + s.blockTable()[i] + " of rows from " + s.firstRow() + " is outside the cache's "
              + cache.numPages() + " pages");
    }
  }

  static Tensor embed(Kernels k, Tensor table, int[] tokens, TensorArena scratch) {
    Tensor h = scratch.allocate(DType.F32, tokens.length, table.dim(1));
    for (int r = 0; r < tokens.length; r++) {
      if (tokens[r] < 0 || tokens[r] >= table.dim(0))
        throw new IllegalArgumentException("token id " + tokens[r] + " outside the vocabulary [0, " + table.dim(0) + ")");
      Tensor row = table.rows(tokens[r], tokens[r] + 1);
      if (row.dtype() == DType.F32) h.rows(r, r + 1).copyFrom(row);
      else k.convert(h.rows(r, r + 1), row);
    }
    return h;
  }

  static Output logits(Kernels k, Tensor h, int[] rows, Tensor norm, Linear head, float eps, TensorArena scratch) {
    int dim = h.dim(1);
    Tensor hidden = scratch.empty(DType.F32, h.dim(0), dim);
    k.rmsNorm(hidden, h, norm, eps);
    Tensor picked = scratch.empty(DType.F32, rows.length, dim);
    for (int i = 0; i < rows.length; i++) picked.rows(i, i + 1).copyFrom(hidden.rows(rows[i], rows[i] + 1));
    Tensor logits = scratch.empty(DType.F32, rows.length, head.outFeatures());
    head.apply(k, logits, picked, scratch);
    return new Output(hidden, logits);
  }

  /**
   * Bytes of weights one token's decode step reads (the memory roofline's numerator): {@link #denseWeightBytes()}
   * plus {@code num_experts_per_tok} routed experts per MoE layer. MTP layers are not counted.
   */
  public long activeWeightBytesPerToken() {
    long bytes = denseWeightBytes();
    for (DecoderLayer layer : layers)
      if (layer.moe() != null) bytes += layer.moe().params().topk() * localExperts.routedExpertBytes(layer.moe().layerId());
    return bytes;
  }

  /**
   * Bytes of the weights every decode step reads whatever its tokens are routed to: an embedding row, every layer's
   * attention in its decode form ({@link Mla#decodeWeightBytes}) and norms, its dense MLP or its gate and shared experts, the final norm and the head. A step's
   * weight traffic is this plus, per MoE layer, the distinct routed experts its tokens pick
   * ({@link LocalExperts#routedExpertBytes}). MTP layers are not counted.
   */
  public long denseWeightBytes() {
    long bytes = (long) embed.dim(1) * embed.dtype().byteSize() + norm.numElements() * 4 + head.bytes();
    for (DecoderLayer layer : layers) {
      bytes += layer.attention().decodeWeightBytes() + 2L * layer.attnNorm().numElements() * 4;
      if (layer.dense() != null) bytes += layer.dense().bytes();
      else bytes += layer.moe().gateBytes() + localExperts.sharedBytes(layer.moe().layerId());
    }
    return bytes;
  }

  /** The same weights computed by other kernels (e.g. another thread count); closing it leaves the weights to this model. */
  public DeepseekModel withKernels(Kernels other) {
    return new DeepseekModel(directory, config, precision, other, null, embed, layers, norm, head, mtp, rope, localExperts);
  }

  /**
   * The model's name for prefix-cache page hashes ({@code PageHashes}): the checkpoint directory's name, so
   * replicas that load the same model from different paths agree.
   */
  public String modelId() {
    Path name = directory.getFileName();
    return name != null ? name.toString() : directory.toString();
  }

  /** The checkpoint directory this model was loaded from (its tokenizer lives there too). */
  public Path directory() {
    return directory;
  }

  public ModelConfig config() {
    return config;
  }

  public Precision precision() {
    return precision;
  }

  public Kernels kernels() {
    return kernels;
  }

  public LocalExperts localExperts() {
    return localExperts;
  }

  /**
   * Drafts from the MTP head over the first {@code n} token ids only (0: the whole vocabulary): {@link #draftMtp}'s
   * head then reads {@code n / vocab} of its weights. Verification is unchanged, so outputs keep the main model's
   * distribution; only drafts outside the first n ids are lost. Set before the model serves.
   */
  public void draftVocabulary(int n) {
    if (n < 0 || n > config.vocabSize())
      throw new IllegalArgumentException("draft vocabulary " + n + " outside [0, " + config.vocabSize() + "] (0: the whole vocabulary)");
    draftVocabulary = n == 0 ? config.vocabSize() : n;
  }

  /** The token ids [0, n) the MTP head drafts from: the whole vocabulary unless {@link #draftVocabulary(int)} set fewer. */
  public int draftVocabulary() {
    return draftVocabulary;
  }

  public int numMtpLayers() {
    return mtp.length;
  }

  /** Whether MTP module {@code depth} computes its drafts with the main model's head itself (see ModelLoader#mtp). */
  public boolean mtpSharesHead(int depth) {
    return mtp[depth].head() == head;
  }

  /** Whether MTP module {@code depth} embeds its tokens with the main model's embedding itself. */
  public boolean mtpSharesEmbedding(int depth) {
    return mtp[depth].embed() == embed;
  }

  @Override
  public void close() {
    if (weights != null) weights.close(); // null for a view made by withKernels
  }
}
