package io.moemesh.engine;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.ForwardBatch;
import io.moemesh.model.LatentKvCache;
import io.moemesh.model.moe.ExpertBackend;
import io.moemesh.model.sampling.SampledToken;
import io.moemesh.model.sampling.Sampler;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Runs a step's chunks through a {@link DeepseekModel} in one forward pass — prompt chunks and decode tokens
 * of many requests together, so the MoE layers see every token of the step at once — then samples each
 * request that reached its last token from its own logits row.
 *
 * <p>A step of at least {@code microBatchThreshold} tokens runs as two micro-batches of whole requests whose
 * layers interleave, so each one's wait on its experts hides behind the other's attention
 * ({@link DeepseekModel#forward(ForwardBatch, LatentKvCache, ExpertBackend, DeepseekModel.LayerObserver, TensorArena,
 * DeepseekModel.MicroBatches)}); the tokens and logits are the same bits either way. Smaller steps run as one
 * batch: there the overlap costs more than it hides (each micro-batch reads the weights again). Off by default
 * ({@link #DEFAULT_MICRO_BATCH_THRESHOLD}).
 */
public final class DeepseekRunner implements ModelRunner {
  /** Sees every logits row the runner samples from (tests, diagnostics); called on the step thread. */
  public interface LogitsObserver {
    void onLogits(String requestId, int position, float[] logits);
  }

  /**
   * The micro-batch threshold unless configured: 0, never split. Overlap pays only where the experts' time can
   * hide — on expert services (e.g. 64 there, as DeepSeek splits large batches only). In-process experts compute
   * at start with the cores attention uses, so splitting hides nothing and reads the weights once per micro-batch.
   */
  public static final int DEFAULT_MICRO_BATCH_THRESHOLD = 0;

  private final DeepseekModel model;
  private final ExpertBackend experts;
  private final int microBatchThreshold; // 0: never split
  private final TensorArena cacheArena = TensorArena.forModel(); // the KV pool: every decode step reads it
  private final TensorArena scratch = TensorArena.workspace(); // one step's temporaries, rewound every step
  private final TensorArena secondScratch; // the second micro-batch's layer temporaries; null when never split
  private final LatentKvCache cache;
  private final KvConnector connector;
  private final LogitsObserver observer;
  private boolean closed;

  /**
   * @param microBatchThreshold tokens per step at or above which a step runs as two overlapped micro-batches;
   *     0 never splits
   */
  public DeepseekRunner(DeepseekModel model, ExpertBackend experts, KvCacheConfig kv, KvConnector connector, LogitsObserver observer,
      int microBatchThreshold) {
    if (microBatchThreshold < 0) throw new IllegalArgumentException("the micro-batch threshold must be ≥ 0 (0 = off), got " + microBatchThreshold);
    this.model = model;
    this.experts = experts;
    this.microBatchThreshold = microBatchThreshold;
    this.secondScratch = microBatchThreshold > 0 ? TensorArena.workspace() : null;
    this.cache = model.newCache(cacheArena, kv.numPages(), kv.pageSize());
    this.connector = connector;
    this.observer = observer;
  }

  public DeepseekRunner(DeepseekModel model, ExpertBackend experts, KvCacheConfig kv, KvConnector connector, LogitsObserver observer) {
    this(model, experts, kv, connector, observer, DEFAULT_MICRO_BATCH_THRESHOLD);
  }

  public DeepseekRunner(DeepseekModel model, ExpertBackend experts, KvCacheConfig kv, LogitsObserver observer) {
    this(model, experts, kv, KvConnector.NONE, observer);
  }

  public DeepseekRunner(DeepseekModel model, KvCacheConfig kv) {
    this(model, model.localExperts(), kv, null);
  }

  @Override
  public RunnerOutput execute(SchedulerOutput plan) {
    ForwardBatch batch = batchOf(plan.chunks());
    scratch.reset();
    int split = microBatchSplit(batch, microBatchThreshold);
    Tensor logits;
    if (split == 0) {
      logits = model.forward(batch, cache, experts, exporter(plan.chunks()), scratch).logits();
    } else {
      secondScratch.reset();
      var micro = new DeepseekModel.MicroBatches(split, secondScratch);
      logits = model.forward(batch, cache, experts, exporter(plan.chunks()), scratch, micro).logits();
    }
    Map<String, SampledToken> sampled = new HashMap<>();
    Map<String, String> failed = new HashMap<>();
    int[] argmax = argmaxOfGreedyRows(plan.chunks(), logits);
    int row = 0;
    for (ScheduledChunk c : plan.chunks()) {
      if (!c.samples()) continue;
      int r = row++;
      if (argmax != null && c.sampler().takesArgmax() && argmax[r] >= 0) {
        sampled.put(c.requestId(), new SampledToken(argmax[r], Optional.empty()));
        continue;
      }
      float[] values = logits.rows(r, r + 1).toFloatArray();
      if (observer != null) observer.onLogits(c.requestId(), c.startPosition() + c.numTokens() - 1, values);
      try {
        sampled.put(c.requestId(), c.sampler().sample(values, c.history()));
      } catch (IllegalArgumentException e) {
        failed.put(c.requestId(), "sampling failed: " + e.getMessage());
      }
    }
    return new RunnerOutput(sampled, failed);
  }

  /**
   * Every sampled row's argmax in one kernel call, when some request takes its token straight from it
   * ({@link Sampler#takesArgmax}) and no observer wants the rows: a batch's rows then never leave native memory
   * (at batch 32, 16 MB a step copied out and scanned in Java took ~2 ms). Null otherwise.
   */
  private int[] argmaxOfGreedyRows(List<ScheduledChunk> chunks, Tensor logits) {
    if (observer != null || chunks.stream().noneMatch(c -> c.samples() && c.sampler().takesArgmax())) return null;
    Tensor ids = scratch.empty(DType.I32, (int) logits.numRows());
    model.kernels().argmaxRows(ids, logits);
    int[] argmax = new int[(int) logits.numRows()];
    for (int r = 0; r < argmax.length; r++) argmax[r] = ids.getInt(r);
    return argmax;
  }

  /**
   * Prefill role: after each layer, the rows each exporting chunk just wrote go to the connector, with any rows
   * before them it did not compute (cached or loaded) that were not handed over yet.
   */
  private DeepseekModel.LayerObserver exporter(List<ScheduledChunk> chunks) {
    List<ScheduledChunk> exporting = chunks.stream().filter(ScheduledChunk::exportsKv).toList();
    if (exporting.isEmpty()) return DeepseekModel.LayerObserver.NONE;
    return layerId -> {
      for (ScheduledChunk c : exporting) {
        int end = c.startPosition() + c.numTokens();
        connector.saveLayer(c.requestId(), layerId, c.exportFrom(), cache.readRows(layerId, c.blockTable(), c.exportFrom(), end - c.exportFrom()));
      }
    };
  }

  @Override
  public KvConnector.KvSink kvSink(int[] blockTable, int numTokens) {
    int layers = model.config().numHiddenLayers(), latentDim = model.config().latentDim();
    return new KvConnector.KvSink() {
      @Override
      public void writeLayer(int layerId, int start, byte[] rows) {
        if (layerId < 0 || layerId >= layers) throw new IllegalArgumentException("layer " + layerId + " is outside [0, " + layers + ")");
        long count = rows.length / ((long) latentDim * cache.dtype().byteSize());
        if (start < 0 || start + count > numTokens)
          throw new IllegalArgumentException("positions [" + start + ", " + (start + count) + ") are outside the " + numTokens + " reserved");
        cache.writeRows(layerId, blockTable, start, rows);
      }

      @Override
      public io.moemesh.kernels.DType dtype() {
        return cache.dtype();
      }

      @Override
      public int latentDim() {
        return latentDim;
      }

      @Override
      public int numLayers() {
        return layers;
      }
    };
  }

  /** Where {@code batch} splits into two micro-batches under {@code threshold}: 0 (one batch) below it, when off, or for one request. */
  static int microBatchSplit(ForwardBatch batch, int threshold) {
    return threshold > 0 && batch.numRows() >= threshold ? batch.microBatchSplit() : 0;
  }

  static ForwardBatch batchOf(List<ScheduledChunk> chunks) {
    int rows = chunks.stream().mapToInt(ScheduledChunk::numTokens).sum();
    int[] tokens = new int[rows], positions = new int[rows];
    List<ForwardBatch.SequenceChunk> sequences = new ArrayList<>(chunks.size());
    List<Integer> logitRows = new ArrayList<>();
    int r = 0;
    for (ScheduledChunk c : chunks) {
      System.arraycopy(c.tokens(), 0, tokens, r, c.numTokens());
      for (int i = 0; i < c.numTokens(); i++) positions[r + i] = c.startPosition() + i;
      sequences.add(new ForwardBatch.SequenceChunk(r, c.numTokens(), c.numPromptTokens(), c.blockTable()));
      r += c.numTokens();
      if (c.samples()) logitRows.add(r - 1);
    }
    return new ForwardBatch(tokens, positions, sequences, logitRows.stream().mapToInt(Integer::intValue).toArray());
  }

  public LatentKvCache cache() {
    return cache;
  }

  @Override
  public synchronized void close() {
    if (closed) return;
    closed = true;
    scratch.close();
    if (secondScratch != null) secondScratch.close();
    cacheArena.close();
  }
}
