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
import io.moemesh.model.sampling.TokenCounts;
import io.moemesh.model.MtpLayer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Level;
import java.util.logging.Logger;

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
 *
 * <p><b>MTP speculative decoding</b> (with {@code speculativeTokens} k &gt; 0). A step is laid out as
 * <pre>
 *   main model over every chunk ─▶ verify + sample ─▶ MTP over each chunk's kept rows ─▶ draft 1 ─▶ MTP chained ─▶ drafts 2..k
 * </pre>
 * A decoding chunk feeds its last token and its drafts d₁..d_D; the rows' logits verify the drafts in order
 * ({@link Sampler#verify}: greedy equality, or exact rejection sampling) and the first rejection's replacement, or
 * the bonus token after the last row, is sampled. The rows of rejected drafts wrote KV that the scheduler drops.
 * The MTP module (depth 0) then runs over every row whose KV stays — all rows of a prompt chunk, the fed token and
 * accepted drafts of a verification — row i with the main model's final hidden state at i and the token at i + 1
 * (the next prompt token, an accepted draft, or the token just sampled), writing the MTP layer's KV there (one more
 * layer of the same paged cache) and drafting from the last row; only that row runs the whole block and the head, the
 * others only to their KV ({@link MtpLayer#draft}), so a verify step's MTP pass costs about one row's block. Further drafts chain the module one position at a
 * time on its own output hidden state, within the pages the scheduler reserved. Every pass is row-independent, so a
 * request's tokens, logits and drafts do not depend on its neighbours. In the prefill role the MTP layer's rows go to
 * the connector after the depth-0 pass, as one more layer after the main model's; a decode engine loads them back
 * ({@link #kvSink} with the MTP layer), so a request decoded there drafts over the prompt's MTP KV as it would here.
 */
public final class DeepseekRunner implements ModelRunner {
  /**
   * Sees every logits row the runner samples from (tests, diagnostics); called on the step thread. With speculative
   * decoding, every verified row up to the emitted token's, including a row after a stop token (the scheduler drops
   * the tokens after a stop; the runner does not know the stop conditions).
   */
  public interface LogitsObserver {
    void onLogits(String requestId, int position, float[] logits);
  }

  /**
   * The micro-batch threshold unless configured: 0, never split. Overlap pays only where the experts' time can
   * hide — on expert services (e.g. 64 there, as DeepSeek splits large batches only). In-process experts compute
   * at start with the cores attention uses, so splitting hides nothing and reads the weights once per micro-batch.
   */
  public static final int DEFAULT_MICRO_BATCH_THRESHOLD = 0;
  private static final Logger LOG = Logger.getLogger(DeepseekRunner.class.getName());

  private final DeepseekModel model;
  private final ExpertBackend experts;
  private final int microBatchThreshold; // 0: never split
  private final TensorArena cacheArena = TensorArena.forModel(); // the KV pool: every decode step reads it
  private final TensorArena scratch = TensorArena.workspace(); // one step's temporaries, rewound every step
  private final TensorArena secondScratch; // the second micro-batch's layer temporaries; null when never split
  private final LatentKvCache cache;
  private final KvConnector connector;
  private final LogitsObserver observer;
  private final int speculativeTokens; // k, 0 = off
  private boolean closed;

  /**
   * @param microBatchThreshold tokens per step at or above which a step runs as two overlapped micro-batches;
   *     0 never splits
   */
  public DeepseekRunner(DeepseekModel model, ExpertBackend experts, KvCacheConfig kv, KvConnector connector, LogitsObserver observer,
      int microBatchThreshold) {
    this(model, experts, kv, connector, observer, microBatchThreshold, 0);
  }

  /**
   * @param speculativeTokens draft tokens per request and step from the model's MTP module, 0 = off
   * @throws IllegalArgumentException if {@code speculativeTokens} &gt; 0 and the model has no MTP layer
   */
  public DeepseekRunner(DeepseekModel model, ExpertBackend experts, KvCacheConfig kv, KvConnector connector, LogitsObserver observer,
      int microBatchThreshold, int speculativeTokens) {
    checkSpeculation(model, speculativeTokens);
    this.speculativeTokens = speculativeTokens;
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

  /** The configuration error of asking a model without MTP layers for drafts. */
  static void checkSpeculation(DeepseekModel model, int speculativeTokens) {
    if (speculativeTokens < 0) throw new IllegalArgumentException("speculative tokens must be ≥ 0 (0 = off), got " + speculativeTokens);
    if (speculativeTokens > 0 && model.numMtpLayers() == 0)
      throw new IllegalArgumentException("speculative decoding with " + speculativeTokens + " token(s) needs the model's MTP module, but "
          + model.directory() + " has none (num_nextn_predict_layers = 0); set speculative tokens to 0");
  }

  @Override
  public RunnerOutput execute(SchedulerOutput plan) {
    List<ScheduledChunk> chunks = plan.chunks();
    ForwardBatch batch = batchOf(chunks);
    scratch.reset();
    int split = microBatchSplit(batch, microBatchThreshold);
    DeepseekModel.Output out;
    if (split == 0) {
      out = model.forward(batch, cache, experts, exporter(chunks), scratch);
    } else {
      secondScratch.reset();
      var micro = new DeepseekModel.MicroBatches(split, secondScratch);
      out = model.forward(batch, cache, experts, exporter(chunks), scratch, micro);
    }
    Tensor logits = out.logits();
    Map<String, SampledToken> sampled = new HashMap<>();
    Map<String, List<SampledToken>> accepted = new HashMap<>();
    Map<String, String> failed = new HashMap<>();
    int[] argmax = argmaxOfGreedyRows(chunks, logits);
    int[] kept = new int[chunks.size()]; // rows of each chunk whose KV stays: what the MTP pass runs over
    int[] next = new int[chunks.size()]; // the token after a chunk's kept rows
    int row = 0;
    for (int i = 0; i < chunks.size(); i++) {
      ScheduledChunk c = chunks.get(i);
      if (!c.samples()) {
        kept[i] = c.numTokens();
        next[i] = c.speculation() != null ? c.speculation().nextToken() : -1;
        continue;
      }
      int first = row;
      row += c.numDraftTokens() + 1;
      try {
        Verified v = verify(c, logits, first, argmax);
        if (!v.accepted().isEmpty()) accepted.put(c.requestId(), v.accepted());
        sampled.put(c.requestId(), v.token());
        kept[i] = c.numTokens() - c.numDraftTokens() + v.accepted().size();
        next[i] = v.token().tokenId();
      } catch (IllegalArgumentException e) {
        failed.put(c.requestId(), "sampling failed: " + e.getMessage());
      }
    }
    Map<String, List<Sampler.Draft>> drafts = speculativeTokens == 0 ? Map.of() : propose(chunks, out.hidden(), kept, next, accepted, sampled);
    return new RunnerOutput(sampled, accepted, drafts, failed);
  }

  /** A sampling chunk's outcome: the drafts accepted, in order, then the token sampled after them. */
  private record Verified(List<SampledToken> accepted, SampledToken token) {}

  /**
   * Verifies a sampling chunk's drafts on its logits rows {@code [first, first + drafts]} and samples the token after
   * the accepted ones (plain sampling of one row without drafts).
   */
  private Verified verify(ScheduledChunk c, Tensor logits, int first, int[] argmax) {
    List<Sampler.Draft> drafts = c.speculation() == null ? List.of() : c.speculation().drafts();
    int numDrafts = drafts.size();
    List<SampledToken> accepted = new ArrayList<>(numDrafts);
    boolean penalties = c.sampler().params().usesPenalties();
    TokenCounts history = numDrafts > 0 && penalties ? c.history().copy() : c.history(); // + the accepted drafts
    boolean fromArgmax = argmax != null && c.sampler().takesArgmax();
    int firstPosition = c.startPosition() + c.numTokens() - 1 - numDrafts;
    for (int j = 0; j <= numDrafts; j++) {
      int r = first + j;
      if (fromArgmax && argmax[r] >= 0) { // greedy without penalties: the argmax is the target token
        var t = new SampledToken(argmax[r], Optional.empty());
        if (j == numDrafts || argmax[r] != drafts.get(j).tokenId()) return new Verified(accepted, t);
        accepted.add(t);
        continue;
      }
      float[] values = logits.rows(r, r + 1).toFloatArray();
      if (observer != null) observer.onLogits(c.requestId(), firstPosition + j, values);
      if (j == numDrafts) return new Verified(accepted, c.sampler().sample(values, history));
      Sampler.Verdict verdict = c.sampler().verify(values, history, drafts.get(j));
      if (!verdict.accepted()) return new Verified(accepted, verdict.token());
      accepted.add(verdict.token());
      if (history != c.history()) history.addGenerated(verdict.token().tokenId());
    }
    throw new AssertionError("unreachable");
  }

  /**
   * The MTP passes of a step (see the class comment): depth 0 over every chunk's kept rows, then chained for the
   * drafts after the first. Returns each proposing request's drafts. A failure here costs only drafts: the step's
   * tokens are already sampled, so it is logged and the step proposes nothing.
   */
  private Map<String, List<Sampler.Draft>> propose(List<ScheduledChunk> chunks, Tensor hidden, int[] kept, int[] next,
      Map<String, List<SampledToken>> accepted, Map<String, SampledToken> sampled) {
    try {
      return draft(chunks, hidden, kept, next, accepted, sampled);
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "the MTP draft pass failed; this step proposes no drafts", e);
      return Map.of();
    }
  }

  private Map<String, List<Sampler.Draft>> draft(List<ScheduledChunk> chunks, Tensor hidden, int[] kept, int[] next,
      Map<String, List<SampledToken>> accepted, Map<String, SampledToken> sampled) {
    int rows = 0;
    for (int i = 0; i < chunks.size(); i++) if (chunks.get(i).speculation() != null && next[i] >= 0) rows += kept[i];
    if (rows == 0) return Map.of();
    int dim = hidden.dim(1);
    int[] tokens = new int[rows], positions = new int[rows];
    Tensor h = scratch.empty(hidden.dtype(), rows, dim);
    List<ForwardBatch.SequenceChunk> sequences = new ArrayList<>();
    List<Integer> logitRows = new ArrayList<>();
    List<ScheduledChunk> proposers = new ArrayList<>();
    List<Integer> lastPositions = new ArrayList<>();
    int r = 0, mainRow = 0;
    for (int i = 0; i < chunks.size(); i++) {
      ScheduledChunk c = chunks.get(i);
      int n = kept[i];
      if (c.speculation() != null && next[i] >= 0 && n > 0) {
        for (int j = 0; j < n; j++) {
          tokens[r + j] = j + 1 < n ? c.tokens()[j + 1] : next[i];
          positions[r + j] = c.startPosition() + j;
        }
        h.rows(r, r + n).copyFrom(hidden.rows(mainRow, mainRow + n));
        sequences.add(new ForwardBatch.SequenceChunk(r, n, c.numPromptTokens(), c.blockTable()));
        r += n;
        if (c.speculation().numToPropose() > 0) {
          logitRows.add(r - 1);
          proposers.add(c);
          lastPositions.add(c.startPosition() + n - 1);
        }
      }
      mainRow += c.numTokens();
    }
    var batch = new ForwardBatch(tokens, positions, sequences, logitRows.stream().mapToInt(Integer::intValue).toArray());
    MtpLayer.Output pass = model.draftMtp(0, batch, h, cache, experts, scratch);
    exportMtpLayer(chunks, kept);
    if (proposers.isEmpty()) return Map.of();

    Map<String, List<Sampler.Draft>> drafts = new HashMap<>();
    List<TokenCounts> histories = new ArrayList<>();
    for (ScheduledChunk c : proposers) histories.add(draftHistory(c, accepted.getOrDefault(c.requestId(), List.of()), sampled.get(c.requestId())));
    Tensor previousHidden = pass.hidden();
    int[] hiddenRow = java.util.stream.IntStream.range(0, proposers.size()).toArray(); // each proposer's row of previousHidden
    List<Integer> chaining = new ArrayList<>(); // indices into proposers still drafting
    for (int p = 0; p < proposers.size(); p++) chaining.add(p);
    Tensor draftLogits = pass.logits();
    for (int depth = 1; ; depth++) {
      List<Integer> still = new ArrayList<>();
      // greedy drafts straight from the kernels' argmax: their rows never leave native memory
      int[] argmax = chaining.stream().anyMatch(p -> proposers.get(p).speculation().drafter().takesArgmax()) ? argmaxRows(draftLogits) : null;
      for (int q = 0; q < chaining.size(); q++) {
        int p = chaining.get(q);
        ScheduledChunk c = proposers.get(p);
        Sampler drafter = c.speculation().drafter();
        Sampler.Draft d;
        try {
          d = argmax != null && drafter.takesArgmax() && argmax[q] >= 0 ? new Sampler.Draft(argmax[q], null, 1)
              : drafter.draft(overVocabulary(draftLogits.rows(q, q + 1).toFloatArray()), histories.get(p));
        } catch (IllegalArgumentException e) { // a broken draft row: no (more) drafts for this request
          continue;
        }
        drafts.computeIfAbsent(c.requestId(), k -> new ArrayList<>()).add(d);
        if (histories.get(p) != c.history()) histories.get(p).addGenerated(d.tokenId());
        int position = lastPositions.get(p) + depth; // where the chained pass writes the MTP layer's KV
        if (depth < c.speculation().numToPropose() && position < model.config().maxPositionEmbeddings()
            && position / cache.pageSize() < c.blockTable().length) still.add(p);
      }
      if (still.isEmpty()) break;
      int m = still.size();
      int[] chainTokens = new int[m], chainPositions = new int[m], chainRows = new int[m];
      Tensor chainHidden = scratch.empty(previousHidden.dtype(), m, dim);
      List<ForwardBatch.SequenceChunk> chainSequences = new ArrayList<>(m);
      for (int q = 0; q < m; q++) {
        int p = still.get(q);
        ScheduledChunk c = proposers.get(p);
        List<Sampler.Draft> own = drafts.get(c.requestId());
        chainTokens[q] = own.getLast().tokenId();
        chainPositions[q] = lastPositions.get(p) + depth;
        chainRows[q] = q;
        chainHidden.rows(q, q + 1).copyFrom(previousHidden.rows(hiddenRow[p], hiddenRow[p] + 1));
        hiddenRow[p] = q;
        chainSequences.add(new ForwardBatch.SequenceChunk(q, 1, c.numPromptTokens(), c.blockTable()));
      }
      MtpLayer.Output chained = model.draftMtp(0, new ForwardBatch(chainTokens, chainPositions, chainSequences, chainRows), chainHidden, cache,
          experts, scratch);
      previousHidden = chained.hidden();
      draftLogits = chained.logits();
      chaining = still;
    }
    return drafts;
  }

  /**
   * Prefill role: the MTP layer's rows each exporting chunk kept go to the connector as one more layer (numbered after
   * the main model's), with the rows before the chunk that were not handed over yet, as {@link #exporter} does.
   */
  private void exportMtpLayer(List<ScheduledChunk> chunks, int[] kept) {
    int mtpLayer = model.config().numHiddenLayers();
    for (int i = 0; i < chunks.size(); i++) {
      ScheduledChunk c = chunks.get(i);
      if (!c.exportsKv() || c.speculation() == null || kept[i] == 0) continue;
      int end = c.startPosition() + kept[i];
      connector.saveLayer(c.requestId(), mtpLayer, c.exportFrom(), cache.readRows(mtpLayer, c.blockTable(), c.exportFrom(), end - c.exportFrom()));
    }
  }

  /**
   * A draft row over the whole vocabulary: with a draft vocabulary (the first ids only) the ids past it get −∞, so the
   * draft distribution q is zero there and verification's residual max(0, p − q) still reaches them.
   */
  private float[] overVocabulary(float[] row) {
    int vocab = model.config().vocabSize();
    if (row.length == vocab) return row;
    float[] full = Arrays.copyOf(row, vocab);
    Arrays.fill(full, row.length, vocab, Float.NEGATIVE_INFINITY);
    return full;
  }

  private int[] argmaxRows(Tensor logits) {
    Tensor ids = scratch.empty(DType.I32, (int) logits.numRows());
    model.kernels().argmaxRows(ids, logits);
    int[] argmax = new int[(int) logits.numRows()];
    for (int r = 0; r < argmax.length; r++) argmax[r] = ids.getInt(r);
    return argmax;
  }

  /** The history a request's drafts are drawn with: its tokens through this step's, when penalties read it. */
  private static TokenCounts draftHistory(ScheduledChunk c, List<SampledToken> accepted, SampledToken token) {
    if (!c.speculation().drafter().params().usesPenalties()) return c.history();
    TokenCounts h = c.history().copy();
    for (SampledToken t : accepted) h.addGenerated(t.tokenId());
    h.addGenerated(token.tokenId());
    return h;
  }

  /**
   * Every sampled row's argmax in one kernel call, when some request takes its token straight from it
   * ({@link Sampler#takesArgmax}) and no observer wants the rows: a batch's rows then never leave native memory
   * (at batch 32, 16 MB a step copied out and scanned in Java took ~2 ms). Null otherwise.
   */
  private int[] argmaxOfGreedyRows(List<ScheduledChunk> chunks, Tensor logits) {
    if (logits.numRows() == 0) return null;
    if (observer != null || chunks.stream().noneMatch(c -> c.samples() && c.sampler().takesArgmax())) return null;
    return argmaxRows(logits);
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
  public KvConnector.KvSink kvSink(int[] blockTable, int numTokens, boolean withMtpLayer) {
    int layers = model.config().numHiddenLayers() + (withMtpLayer ? 1 : 0), latentDim = model.config().latentDim();
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
      if (c.samples()) for (int i = c.numDraftTokens(); i >= 0; i--) logitRows.add(r - 1 - i); // each draft's row, then the last
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
