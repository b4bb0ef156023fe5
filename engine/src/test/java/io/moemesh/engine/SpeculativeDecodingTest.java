package io.moemesh.engine;

import static io.moemesh.engine.EngineTest.TIMEOUT;
import static io.moemesh.engine.EngineTest.awaitIdle;
import static io.moemesh.engine.EngineTest.randomPrompt;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.engine.kv.KvCacheManager;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.Precision;
import io.moemesh.model.demo.DemoCheckpoint;
import io.moemesh.model.sampling.Sampler;
import io.moemesh.model.sampling.SamplingParams;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * MTP speculative decoding on the tiny model (one MTP layer, random weights: its drafts are rarely right, so some
 * tests also swap in drafts from an oracle that knows the answer, to drive the accepting paths through the real model).
 */
class SpeculativeDecodingTest {
  static final SamplingParams GREEDY = SamplingParams.greedy().toBuilder().ignoreEos(true).build();

  /** Rewrites the drafts a step proposes (tests only): request id, its tokens so far and the real drafts in, drafts out. */
  interface DraftRewriter {
    List<Sampler.Draft> rewrite(String requestId, int numTokens, List<Sampler.Draft> proposed);
  }

  /**
   * What one speculative run gave, with every step's plan, and the decode steps (every chunk past its prompt): their
   * runner time and the tokens they emitted.
   */
  record SpecRun(EngineTest.Run run, List<SchedulerOutput> plans, List<long[]> decodeSteps) {
    double decodeTokensPerSecond() {
      long nanos = decodeSteps.stream().mapToLong(s -> s[0]).sum(), tokens = decodeSteps.stream().mapToLong(s -> s[1]).sum();
      return tokens / (nanos / 1e9);
    }

    double msPerDecodeStep() {
      double[] sorted = decodeSteps.stream().mapToDouble(s -> s[0] / 1e6).sorted().toArray();
      return sorted[sorted.length / 2];
    }
  }

  static SpecRun run(DeepseekModel model, SchedulerConfig scheduler, KvCacheConfig kv, List<GenerationRequest> requests, int k,
      DraftRewriter rewriter, boolean observe) throws Exception {
    return run(model, scheduler, kv, requests, k, rewriter, observe, TIMEOUT);
  }

  static SpecRun run(DeepseekModel model, SchedulerConfig scheduler, KvCacheConfig kv, List<GenerationRequest> requests, int k,
      DraftRewriter rewriter, boolean observe, java.time.Duration timeout) throws Exception {
    Map<String, Map<Integer, float[]>> logits = new ConcurrentHashMap<>();
    DeepseekRunner.LogitsObserver observer = observe
        ? (id, position, row) -> logits.computeIfAbsent(id, x -> new ConcurrentHashMap<>()).put(position, row) : null;
    var manager = new KvCacheManager(kv.numPages(), kv.pageSize(), model.modelId(), kv.prefixCaching(), k > 0);
    var real = new DeepseekRunner(model, model.localExperts(), kv, KvConnector.NONE, observer, 0, k);
    var sched = new Scheduler(scheduler, manager, ModelLimits.of(model.config()), k);
    List<SchedulerOutput> plans = java.util.Collections.synchronizedList(new ArrayList<>());
    List<long[]> decodeSteps = java.util.Collections.synchronizedList(new ArrayList<>());
    ModelRunner runner = new ModelRunner() {
      @Override
      public RunnerOutput execute(SchedulerOutput plan) {
        plans.add(plan);
        long t0 = System.nanoTime();
        RunnerOutput out = real.execute(plan);
        long t1 = System.nanoTime();
        if (plan.chunks().stream().allMatch(c -> c.startPosition() >= c.numPromptTokens()))
          decodeSteps.add(new long[] {t1 - t0, plan.chunks().stream().mapToLong(c -> 1 + out.acceptedOf(c.requestId()).size()).sum()});
        if (rewriter == null) return out;
        Map<String, List<Sampler.Draft>> drafts = new HashMap<>();
        for (ScheduledChunk c : plan.chunks()) {
          if (!out.sampled().containsKey(c.requestId())) continue;
          int n = c.startPosition() + c.numTokens() - c.numDraftTokens() + out.acceptedOf(c.requestId()).size() + 1;
          List<Sampler.Draft> d = rewriter.rewrite(c.requestId(), n, out.drafts().getOrDefault(c.requestId(), List.of()));
          if (!d.isEmpty()) drafts.put(c.requestId(), d);
        }
        return new RunnerOutput(out.sampled(), out.accepted(), drafts, out.failed());
      }

      @Override
      public void close() {
        real.close();
      }
    };
    try (Engine engine = new Engine(new EngineCore(sched, runner, manager), "engine-spec-test")) {
      List<RequestStream> streams = engine.submitAll(requests);
      Map<String, RequestStream.Completion> done = new ConcurrentHashMap<>();
      for (RequestStream s : streams) {
        var c = s.await(timeout);
        done.put(c.requestId(), c);
      }
      return new SpecRun(new EngineTest.Run(done, logits, awaitIdle(engine)), plans, decodeSteps);
    }
  }

  static EngineTest.Run plain(DeepseekModel model, SchedulerConfig scheduler, KvCacheConfig kv, List<GenerationRequest> requests)
      throws Exception {
    return EngineTest.run(model, scheduler, kv, requests);
  }

  /** Greedy requests of mixed lengths, one extending another's prompt (a prefix hit), one ending at a stop token. */
  static List<GenerationRequest> greedyRequests(int[] stopAt) {
    var requests = new ArrayList<GenerationRequest>();
    int[] lengths = {5, 17, 33, 40, 9, 24};
    for (int i = 0; i < lengths.length; i++) requests.add(GenerationRequest.of("g" + i, randomPrompt(i, lengths[i]), GREEDY, 6 + i * 3));
    int[] extended = Arrays.copyOf(randomPrompt(3, 40), 52);
    System.arraycopy(randomPrompt(99, 12), 0, extended, 40, 12);
    requests.add(GenerationRequest.of("ext", extended, GREEDY, 12));
    requests.add(GenerationRequest.of("penalized", randomPrompt(7, 14), GREEDY.toBuilder().presencePenalty(1.5).repetitionPenalty(1.3).build(), 16));
    if (stopAt != null)
      requests.add(GenerationRequest.of("stop", randomPrompt(1, 17), GREEDY.toBuilder().stopTokenIds(java.util.Set.of(stopAt[0])).build(), 30));
    return requests;
  }

  /**
   * The tokens of {@code expected}, and its logits at every position it sampled. A speculative run may also have seen
   * the row after a stop: the runner verifies a whole run of drafts, and the scheduler drops what follows a stop.
   */
  static void assertSameTokensAndLogits(EngineTest.Run actual, EngineTest.Run expected) {
    assertThat(actual.completions().keySet()).isEqualTo(expected.completions().keySet());
    for (String id : expected.completions().keySet()) {
      assertThat(actual.tokens(id)).as("tokens of %s", id).isEqualTo(expected.tokens(id));
      assertThat(actual.logits().get(id).keySet()).containsAll(expected.logits().get(id).keySet());
      for (var e : expected.logits().get(id).entrySet())
        assertThat(actual.logits().get(id).get(e.getKey())).as("logits of %s at position %d", id, e.getKey()).isEqualTo(e.getValue());
    }
  }

  /** Every counter adds up: accepted = Σ per position, per position non-increasing, drafts verified ≤ k per verification. */
  static void assertCountersAddUp(SpecDecodeStats s, int k) {
    long[] perPosition = s.acceptedPerPosition();
    assertThat(perPosition).hasSize(k);
    assertThat(Arrays.stream(perPosition).sum()).isEqualTo(s.numAcceptedTokens());
    for (int i = 1; i < k; i++) assertThat(perPosition[i]).isLessThanOrEqualTo(perPosition[i - 1]);
    assertThat(s.numAcceptedTokens()).isLessThanOrEqualTo(s.numDraftTokens());
    assertThat(s.numDraftTokens()).isBetween(s.numDrafts(), s.numDrafts() * k);
  }

  /** The oracle: the true continuation for the first {@code right} drafts, then a wrong token. */
  static DraftRewriter oracle(Map<String, int[]> truth, int right, int k) {
    return (id, numTokens, proposed) -> {
      int[] t = truth.get(id);
      List<Sampler.Draft> d = new ArrayList<>();
      for (int j = 0; j < k; j++) {
        int position = numTokens + j;
        if (position >= t.length) break;
        int token = j < right ? t[position] : (t[position] + 1) % 1024;
        d.add(new Sampler.Draft(token, null, 1));
      }
      return d;
    };
  }

  static Map<String, int[]> fullSequences(List<GenerationRequest> requests, EngineTest.Run run) {
    Map<String, int[]> all = new HashMap<>();
    for (GenerationRequest r : requests) {
      int[] out = run.tokens(r.id());
      int[] seq = Arrays.copyOf(r.promptTokenIds(), r.numPromptTokens() + out.length);
      System.arraycopy(out, 0, seq, r.numPromptTokens(), out.length);
      all.put(r.id(), seq);
    }
    return all;
  }

  @Nested
  class Greedy {
    @ParameterizedTest
    @ValueSource(ints = {1, 2})
    void tokensAndLogitsAreThoseWithoutSpeculationChunkedAndSharingPrefixes(int k) throws Exception {
      DeepseekModel model = TinyModel.model(Precision.INT8);
      var scheduler = SchedulerConfig.defaults().withMaxBatchedTokens(19);
      var kv = new KvCacheConfig(64, 8, true);
      EngineTest.Run off0 = plain(model, scheduler, kv, greedyRequests(null));
      int[] stop = {off0.tokens("g1")[4]}; // "stop" shares g1's prompt: it stops at its 5th token or before
      List<GenerationRequest> requests = greedyRequests(stop);
      EngineTest.Run off = plain(model, scheduler, kv, requests);

      SpecRun mtp = run(model, scheduler, kv, requests, k, null, true);
      assertSameTokensAndLogits(mtp.run(), off);
      SpecDecodeStats s = mtp.run().stats().speculation();
      assertThat(s.numDraftTokens()).as("drafts were verified").isPositive();
      assertCountersAddUp(s, k);
      System.out.printf("k=%d real MTP drafts: %s, %d steps (%d without)%n", k, s, mtp.run().stats().steps(), off.stats().steps());

      Map<String, int[]> truth = fullSequences(requests, off);
      for (int right = 0; right <= k; right++) { // drafts right up to a point, then wrong: every acceptance length
        SpecRun oracle = run(model, scheduler, kv, requests, k, oracle(truth, right, k), right % 2 == 0);
        if (right % 2 == 0) assertSameTokensAndLogits(oracle.run(), off);
        else for (GenerationRequest r : requests) assertThat(oracle.run().tokens(r.id())).as("%s", r.id()).isEqualTo(off.tokens(r.id()));
        SpecDecodeStats o = oracle.run().stats().speculation();
        assertCountersAddUp(o, k);
        assertThat(o.acceptedPerPosition()[0] > 0).as("accepted at the first position with %d right", right).isEqualTo(right > 0);
        if (right == k) assertThat(oracle.run().stats().steps()).as("fewer steps").isLessThan(off.stats().steps());
        assertThat(oracle.run().stats().generatedTokens()).isGreaterThanOrEqualTo(
            requests.stream().mapToLong(r -> off.tokens(r.id()).length).sum());
        System.out.printf("k=%d oracle right=%d: %s, %d steps%n", k, right, o, oracle.run().stats().steps());
      }
      assertThat(off.completions().get("stop").status()).isEqualTo(RequestStatus.FINISHED_STOPPED);
    }

    /** A draft vocabulary (the first ids only) changes which drafts the MTP head can make, never the output. */
    @Test
    void withADraftVocabularyDraftsStayInItAndTokensAndLogitsAreThoseWithoutSpeculation() throws Exception {
      DeepseekModel model = TinyModel.model(Precision.INT8);
      var kv = new KvCacheConfig(64, 8, true);
      List<GenerationRequest> requests = greedyRequests(null);
      EngineTest.Run off = plain(model, EngineTest.ROOMY, kv, requests);
      int vocabulary = model.config().vocabSize() / 4;
      List<Integer> drafted = java.util.Collections.synchronizedList(new ArrayList<>());
      SpecRun mtp;
      model.draftVocabulary(vocabulary);
      try {
        mtp = run(model, EngineTest.ROOMY, kv, requests, 2, (id, numTokens, proposed) -> {
          proposed.forEach(d -> drafted.add(d.tokenId()));
          return proposed;
        }, true);
      } finally {
        model.draftVocabulary(0); // the model is shared by the tests
      }
      assertSameTokensAndLogits(mtp.run(), off);
      assertThat(drafted).as("drafts were made").isNotEmpty().allMatch(t -> t >= 0 && t < vocabulary);
      assertCountersAddUp(mtp.run().stats().speculation(), 2);
    }

    @Test
    void tokensFromTheKernelsArgmaxMatchTooAndRejectedDraftsLeaveNoPages() throws Exception {
      DeepseekModel model = TinyModel.model(Precision.BF16);
      var kv = new KvCacheConfig(40, 8, true);
      List<GenerationRequest> requests = greedyRequests(null);
      EngineTest.Run off = plain(model, EngineTest.ROOMY, kv, requests);
      Map<String, int[]> truth = fullSequences(requests, off);
      SpecRun mtp = run(model, EngineTest.ROOMY, kv, requests, 3, oracle(truth, 1, 3), false);
      for (GenerationRequest r : requests) assertThat(mtp.run().tokens(r.id())).isEqualTo(off.tokens(r.id()));
      assertThat(mtp.run().stats().kvCache().usedPages()).isZero();
      assertThat(mtp.run().stats().kvCache().freePages() + mtp.run().stats().kvCache().cachedPages()).isEqualTo(40);
      // while running, a request held pages for its tokens and at most the step's drafts and lookahead beyond
      for (SchedulerOutput plan : mtp.plans())
        for (ScheduledChunk c : plan.chunks())
          assertThat(c.blockTable().length).isLessThanOrEqualTo((c.startPosition() + c.numTokens() + 2 + 7) / 8);
    }
  }

  @Nested
  class BatchInvariance {
    /**
     * With speculation on, sampled and greedy requests (penalties included) get the same tokens and logits batched,
     * chunked and sharing cached prefixes as each alone: drafts, their random streams and the MTP layer's KV are the
     * request's own (a cached page is keyed by the token after it too).
     */
    @Test
    void requestsGetTheTokensAndLogitsOfEachAlone() throws Exception {
      DeepseekModel model = TinyModel.model(Precision.INT8);
      List<GenerationRequest> requests = EngineTest.mixedRequests();
      SpecRun together = run(model, SchedulerConfig.defaults().withMaxBatchedTokens(19), new KvCacheConfig(64, 8, true), requests, 2, null, true);
      Map<String, RequestStream.Completion> completions = new HashMap<>();
      Map<String, Map<Integer, float[]>> logits = new HashMap<>();
      for (GenerationRequest r : requests) {
        SpecRun one = run(model, EngineTest.ROOMY, new KvCacheConfig(64, 16, false), List.of(r), 2, null, true);
        completions.putAll(one.run().completions());
        logits.putAll(one.run().logits());
      }
      var alone = new EngineTest.Run(completions, logits, null);
      assertSameTokensAndLogits(together.run(), alone);
      assertSameTokensAndLogits(alone, together.run());
      assertThat(together.run().stats().kvCache().hitTokens()).as("a prefix was shared").isPositive();
    }
  }

  @Nested
  class Drafts {
    /**
     * The first draft after each step is the MTP module's argmax at the request's last computed position, as the model
     * computes it over the whole sequence at once: the MTP layer's KV covered every position, prompt chunks included.
     */
    @Test
    void firstDraftsAreTheOneShotMtpArgmax() throws Exception {
      DeepseekModel model = TinyModel.model(Precision.EXACT);
      var scheduler = SchedulerConfig.defaults().withMaxBatchedTokens(13);
      var kv = new KvCacheConfig(64, 8, true);
      List<GenerationRequest> requests = greedyRequests(null);
      Map<String, Map<Integer, Integer>> proposed = new ConcurrentHashMap<>();
      DraftRewriter recorder = (id, numTokens, d) -> {
        if (!d.isEmpty()) proposed.computeIfAbsent(id, x -> new ConcurrentHashMap<>()).put(numTokens, d.getFirst().tokenId());
        return d;
      };
      SpecRun mtp = run(model, scheduler, kv, requests, 1, recorder, false);
      int compared = 0, same = 0;
      for (GenerationRequest r : requests) {
        int[] seq = fullSequences(List.of(r), mtp.run()).get(r.id());
        float[][] mtpLogits = mtpOneShot(model, seq);
        for (var e : proposed.getOrDefault(r.id(), Map.of()).entrySet()) {
          int numTokens = e.getKey(); // the draft is for position numTokens, from the MTP row at numTokens - 2
          if (numTokens - 2 >= mtpLogits.length) continue;
          compared++;
          if (argmax(mtpLogits[numTokens - 2]) == e.getValue()) same++;
        }
      }
      assertThat(compared).isGreaterThan(40);
      assertThat(same).as("drafts equal to the one-shot MTP argmax, of %d", compared).isEqualTo(compared);
    }
  }

  /**
   * A second draft is the module chained once: its own output hidden state at the last kept position and the first
   * draft, at the next position, over the MTP layer's KV of every position before.
   */
  @Test
  void chainedDraftsAreTheModuleAppliedToItsOwnOutput() throws Exception {
    DeepseekModel model = TinyModel.model(Precision.EXACT);
    GenerationRequest r = GenerationRequest.of("c", randomPrompt(21, 19), GREEDY, 14);
    record Proposal(int numTokens, int[] drafts) {}
    List<Proposal> proposals = java.util.Collections.synchronizedList(new ArrayList<>());
    DraftRewriter recorder = (id, numTokens, d) -> {
      proposals.add(new Proposal(numTokens, d.stream().mapToInt(Sampler.Draft::tokenId).toArray()));
      return d;
    };
    SpecRun spec = run(model, SchedulerConfig.defaults().withMaxBatchedTokens(7), new KvCacheConfig(64, 8, true), List.of(r), 2, recorder, false);
    int[] seq = fullSequences(List.of(r), spec.run()).get("c");
    int checked = 0;
    for (Proposal p : proposals) {
      if (p.drafts().length < 2 || p.numTokens() > seq.length) continue;
      assertThat(p.drafts()).as("drafts after %d tokens", p.numTokens()).containsExactly(chainReference(model, Arrays.copyOf(seq, p.numTokens())));
      checked++;
    }
    assertThat(checked).isGreaterThan(5);
  }

  /** Drafts 1 and 2 after {@code tokens}: the MTP module over every position in one pass, then once chained. */
  static int[] chainReference(DeepseekModel model, int[] tokens) {
    int t = tokens.length - 1, page = 8;
    int[] table = java.util.stream.IntStream.range(0, (t + 1 + page - 1) / page).toArray();
    try (var arena = io.moemesh.kernels.TensorArena.open()) {
      var cache = model.newCache(arena, table.length, page);
      var out = model.forward(io.moemesh.model.ForwardBatch.single(Arrays.copyOf(tokens, t), 0, t, table, true), cache, arena);
      // every row through the whole block (all rows' logits), not the engine's last-row-only form
      var mtp = io.moemesh.model.ForwardBatch.single(Arrays.copyOfRange(tokens, 1, t + 1), 0, t, table, true);
      var first = model.draftMtp(0, mtp, out.hidden(), cache, model.localExperts(), arena);
      int d1 = argmax(first.logits().rows(t - 1, t).toFloatArray());
      var h = arena.allocate(io.moemesh.kernels.DType.F32, 1, first.hidden().dim(1));
      h.copyFrom(first.hidden().rows(t - 1, t));
      var chained = model.draftMtp(0, io.moemesh.model.ForwardBatch.single(new int[] {d1}, t, t, table, false), h, cache, model.localExperts(), arena);
      return new int[] {d1, argmax(chained.logits().toFloatArray())};
    }
  }

  /** The MTP module's logits at positions [0, T - 1) of {@code tokens}, main model and module each in one pass. */
  static float[][] mtpOneShot(DeepseekModel model, int[] tokens) {
    int t = tokens.length - 1, page = 8;
    int[] table = java.util.stream.IntStream.range(0, (t + page - 1) / page).toArray();
    try (var arena = io.moemesh.kernels.TensorArena.open()) {
      var cache = model.newCache(arena, table.length, page);
      var out = model.forward(io.moemesh.model.ForwardBatch.single(Arrays.copyOf(tokens, t), 0, t, table, true), cache, arena);
      var draft = io.moemesh.model.ForwardBatch.single(Arrays.copyOfRange(tokens, 1, t + 1), 0, t, table, true);
      float[] all = model.forwardMtp(0, draft, out.hidden(), cache, arena).toFloatArray();
      int vocab = all.length / t;
      float[][] rows = new float[t][];
      for (int i = 0; i < t; i++) rows[i] = Arrays.copyOfRange(all, i * vocab, (i + 1) * vocab);
      return rows;
    }
  }

  static int argmax(float[] x) {
    int best = 0;
    for (int i = 1; i < x.length; i++) if (x[i] > x[best]) best = i;
    return best;
  }

  @Nested
  class Lifecycle {
    @Test
    void abortDuringVerificationFreesEverything() throws Exception {
      DeepseekModel model = TinyModel.model(Precision.INT8);
      var kv = new KvCacheConfig(64, 8, true);
      try (Engine engine = Engine.create(EngineSpec.of(model, EngineTest.ROOMY, kv).withSpeculativeTokens(2))) {
        RequestStream a = engine.submit(GenerationRequest.of("a", randomPrompt(1, 9), GREEDY, 100_000));
        RequestStream b = engine.submit(GenerationRequest.of("b", randomPrompt(2, 30), SamplingParams.builder().seed(3L).ignoreEos(true).build(), 100_000));
        for (int i = 0; i < 5; i++) {
          a.next(TIMEOUT);
          b.next(TIMEOUT);
        }
        engine.abort("a");
        engine.abort("b");
        assertThat(a.await(TIMEOUT).status()).isEqualTo(RequestStatus.FINISHED_ABORTED);
        assertThat(b.await(TIMEOUT).status()).isEqualTo(RequestStatus.FINISHED_ABORTED);
        EngineStats idle = awaitIdle(engine);
        assertThat(idle.kvCache().usedPages()).isZero();
        assertThat(idle.kvCache().freePages() + idle.kvCache().cachedPages()).isEqualTo(64);
        assertThat(idle.speculation().numDrafts()).isPositive();
      }
    }

    @Test
    void preemptedSpeculatingRequestsResumeWithTheSameTokens() throws Exception {
      DeepseekModel model = TinyModel.model(Precision.INT8);
      List<GenerationRequest> requests = greedyRequests(null);
      EngineTest.Run off = plain(model, EngineTest.ROOMY, new KvCacheConfig(64, 8, true), requests);
      SpecRun crowded = run(model, EngineTest.ROOMY, new KvCacheConfig(11, 8, true), requests, 2, oracle(fullSequences(requests, off), 1, 2), false);
      assertThat(crowded.run().stats().preemptions()).isPositive();
      for (GenerationRequest r : requests) assertThat(crowded.run().tokens(r.id())).as("%s", r.id()).isEqualTo(off.tokens(r.id()));
      assertThat(crowded.run().stats().kvCache().usedPages()).isZero();
    }

    @Test
    void aModelWithoutMtpLayersIsAConfigurationError() throws Exception {
      Path dir = Files.createTempDirectory("moemesh-no-mtp");
      Path config = dir.resolve("config.json");
      try (var in = DemoCheckpoint.class.getResourceAsStream("/io/moemesh/model/configs/tiny.json")) {
        Files.writeString(config, new String(in.readAllBytes()).replaceAll("\"num_nextn_predict_layers\":\\s*1", "\"num_nextn_predict_layers\": 0"));
      }
      DemoCheckpoint.write(config, dir.resolve("model"), 7, DemoCheckpoint.Format.BF16, (d, t) -> {});
      try (DeepseekModel model = DeepseekModel.load(dir.resolve("model"), Precision.BF16, TinyModel.kernels(), (d, t) -> {})) {
        assertThat(model.numMtpLayers()).isZero();
        assertThatThrownBy(() -> Engine.create(EngineSpec.of(model, EngineTest.ROOMY, new KvCacheConfig(8, 8, true))
            .withSpeculativeTokens(1))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("num_nextn_predict_layers = 0");
        Engine.create(EngineSpec.of(model, EngineTest.ROOMY, new KvCacheConfig(8, 8, true))).close();
      }
    }
  }
}
