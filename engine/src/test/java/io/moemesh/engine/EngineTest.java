package io.moemesh.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.model.DeepseekModel;
import io.moemesh.model.Precision;
import io.moemesh.model.moe.ExpertBackend;
import io.moemesh.model.sampling.SamplingParams;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The engine on the tiny model: real forward passes, real sampling, the step loop on its own thread. */
class EngineTest {
  static final Duration TIMEOUT = Duration.ofSeconds(60);
  static final SchedulerConfig ROOMY = SchedulerConfig.defaults().withMaxBatchedTokens(4096);

  /** What one engine run produced: tokens per request, and the logits row behind each sampled position. */
  record Run(Map<String, RequestStream.Completion> completions, Map<String, Map<Integer, float[]>> logits, EngineStats stats) {
    int[] tokens(String id) {
      return completions.get(id).tokenIds();
    }
  }

  static Run run(DeepseekModel model, SchedulerConfig scheduler, KvCacheConfig kv, List<GenerationRequest> requests) throws Exception {
    return run(model, model.localExperts(), scheduler, kv, requests);
  }

  static Run run(DeepseekModel model, ExpertBackend experts, SchedulerConfig scheduler, KvCacheConfig kv, List<GenerationRequest> requests)
      throws Exception {
    return run(model, experts, scheduler, kv, requests, DeepseekRunner.DEFAULT_MICRO_BATCH_THRESHOLD);
  }

  static Run run(DeepseekModel model, ExpertBackend experts, SchedulerConfig scheduler, KvCacheConfig kv, List<GenerationRequest> requests,
      int microBatchThreshold) throws Exception {
    Map<String, Map<Integer, float[]>> logits = new ConcurrentHashMap<>();
    try (Engine engine = Engine.create(EngineSpec.of(model, scheduler, kv).withExperts(experts).withMicroBatchThreshold(microBatchThreshold)
        .withObserver((id, position, row) -> logits.computeIfAbsent(id, k -> new ConcurrentHashMap<>()).put(position, row)))) {
      List<RequestStream> streams = engine.submitAll(requests); // one scheduler turn sees them all: no timing luck
      Map<String, RequestStream.Completion> done = new ConcurrentHashMap<>();
      for (RequestStream s : streams) {
        var c = s.await(TIMEOUT);
        done.put(c.requestId(), c);
      }
      return new Run(done, logits, awaitIdle(engine));
    }
  }

  /** The stats once the engine has nothing left (they are published after each loop turn). */
  static EngineStats awaitIdle(Engine engine) throws InterruptedException, TimeoutException {
    long deadline = System.nanoTime() + TIMEOUT.toNanos();
    while (System.nanoTime() < deadline) {
      EngineStats s = engine.stats();
      if (s.numRunning() == 0 && s.numWaiting() == 0 && s.kvCache().usedPages() == 0) return s;
      Thread.onSpinWait();
    }
    throw new TimeoutException("engine still busy: " + engine.stats());
  }

  static int[] randomPrompt(long seed, int length) {
    var random = new SplittableRandom(seed);
    int[] t = new int[length];
    for (int i = 0; i < length; i++) t[i] = 2 + random.nextInt(1000); // tiny vocab 1024; 0 = BOS, 1 = EOS
    return t;
  }

  /** Mixed lengths; greedy and seeded sampling with penalties; one prompt that extends another. */
  static List<GenerationRequest> mixedRequests() {
    var sampled = SamplingParams.greedy().toBuilder().temperature(0.8).topP(0.9).seed(11L).presencePenalty(0.5).build();
    var requests = new ArrayList<GenerationRequest>();
    int[] lengths = {5, 17, 33, 40, 9, 24};
    for (int i = 0; i < lengths.length; i++) {
      var params = i % 2 == 0 ? SamplingParams.greedy().toBuilder().ignoreEos(true).build() : sampled.toBuilder().seed(100L + i).ignoreEos(true).build();
      requests.add(GenerationRequest.of("r" + i, randomPrompt(i, lengths[i]), params, 6 + i * 2));
    }
    int[] extended = java.util.Arrays.copyOf(randomPrompt(3, 40), 52);
    System.arraycopy(randomPrompt(99, 12), 0, extended, 40, 12);
    requests.add(GenerationRequest.of("ext", extended, SamplingParams.greedy().toBuilder().ignoreEos(true).build(), 10));
    return requests;
  }

  static void assertSameTokensAndLogits(Run actual, Run expected) {
    assertThat(actual.completions().keySet()).isEqualTo(expected.completions().keySet());
    for (String id : expected.completions().keySet()) {
      assertThat(actual.tokens(id)).as("tokens of %s", id).isEqualTo(expected.tokens(id));
      assertThat(actual.logits().get(id).keySet()).isEqualTo(expected.logits().get(id).keySet());
      for (var e : expected.logits().get(id).entrySet())
        assertThat(actual.logits().get(id).get(e.getKey())).as("logits of %s at position %d", id, e.getKey()).isEqualTo(e.getValue());
    }
  }

  /** Each request in an engine of its own: no batch, no chunking, no cache hits. */
  static Run alone(DeepseekModel model, List<GenerationRequest> requests) throws Exception {
    Map<String, RequestStream.Completion> completions = new ConcurrentHashMap<>();
    Map<String, Map<Integer, float[]>> logits = new ConcurrentHashMap<>();
    EngineStats last = null;
    for (GenerationRequest r : requests) {
      Run one = run(model, ROOMY, new KvCacheConfig(64, 16, false), List.of(r));
      completions.putAll(one.completions());
      logits.putAll(one.logits());
      last = one.stats();
    }
    return new Run(completions, logits, last);
  }

  @Nested
  class BatchInvariance {
    @ParameterizedTest
    @EnumSource(Precision.class)
    void requestsBatchedChunkedAndSharingPrefixesGetTheTokensAndLogitsOfEachAlone(Precision precision) throws Exception {
      DeepseekModel model = TinyModel.model(precision);
      List<GenerationRequest> requests = mixedRequests();
      Run together = run(model, SchedulerConfig.defaults().withMaxBatchedTokens(19), new KvCacheConfig(64, 8, true), requests);
      assertSameTokensAndLogits(together, alone(model, requests));
      assertThat(together.stats().steps()).as("chunked: far more steps than one per token").isGreaterThan(20);
      for (GenerationRequest r : requests)
        assertThat(together.completions().get(r.id()).usage()).isEqualTo(new Usage(r.numPromptTokens(), r.maxTokens(),
            together.completions().get(r.id()).usage().cachedPromptTokens()));
    }
  }

  @Nested
  class GreedySampling {
    /**
     * Without an observer the greedy rows' tokens come from one argmaxRows call on the step's logits, not from the
     * sampler on rows copied out: every token is the one the sampler picks (the observed run), in every precision.
     */
    @ParameterizedTest
    @EnumSource(Precision.class)
    void tokensFromTheKernelsArgmaxAreTheSamplers(Precision precision) throws Exception {
      DeepseekModel model = TinyModel.model(precision);
      List<GenerationRequest> requests = mixedRequests();
      var kv = new KvCacheConfig(64, 8, true);
      Run observed = run(model, ROOMY, kv, requests);
      try (Engine engine = Engine.create(EngineSpec.of(model, ROOMY, kv))) {
        List<RequestStream> streams = engine.submitAll(requests);
        for (RequestStream stream : streams) {
          var c = stream.await(TIMEOUT);
          assertThat(c.tokenIds()).as("tokens of %s", c.requestId()).isEqualTo(observed.tokens(c.requestId()));
        }
      }
    }
  }

  @Nested
  class PrefixCache {
    @Test
    void aPromptReusingACachedPrefixGetsTheLogitsOfAColdRun() throws Exception {
      DeepseekModel model = TinyModel.model(Precision.INT8);
      List<GenerationRequest> requests = mixedRequests();
      GenerationRequest base = requests.get(3), extended = requests.getLast();
      Map<String, Map<Integer, float[]>> logits = new ConcurrentHashMap<>();
      RequestStream.Completion warm;
      EngineStats stats;
      try (Engine engine = Engine.create(EngineSpec.of(model, ROOMY, new KvCacheConfig(64, 8, true))
          .withObserver((id, position, row) -> logits.computeIfAbsent(id, k -> new ConcurrentHashMap<>()).put(position, row)))) {
        engine.submit(base).await(TIMEOUT);
        warm = engine.submit(extended).await(TIMEOUT);
        stats = awaitIdle(engine);
      }
      assertThat(warm.usage().cachedPromptTokens()).as("40 shared tokens = 5 full pages of 8").isEqualTo(40);
      assertThat(stats.kvCache().hitTokens()).isEqualTo(40);
      assertThat(stats.kvCache().cachedPages()).isPositive();
      Run cold = alone(model, List.of(extended));
      assertThat(warm.tokenIds()).isEqualTo(cold.tokens(extended.id()));
      for (var e : cold.logits().get(extended.id()).entrySet())
        assertThat(logits.get(extended.id()).get(e.getKey())).isEqualTo(e.getValue());
    }
  }

  @Nested
  class Preemption {
    @Test
    void preemptedRequestsResumeWithTheSameTokens() throws Exception {
      DeepseekModel model = TinyModel.model(Precision.INT8);
      List<GenerationRequest> requests = mixedRequests();
      // 14 pages of 8 tokens: the requests need up to 8 pages each, so they evict one another
      Run crowded = run(model, ROOMY, new KvCacheConfig(14, 8, true), requests);
      assertThat(crowded.stats().preemptions()).isPositive();
      assertSameTokensAndLogits(crowded, alone(model, requests));
    }
  }

  @Nested
  class Abort {
    @Test
    void abortingInEveryStateReturnsThePoolToEmpty() throws Exception {
      DeepseekModel model = TinyModel.model(Precision.INT8);
      var config = SchedulerConfig.defaults().withMaxBatchedTokens(16).withMaxRunningRequests(2);
      try (Engine engine = Engine.create(EngineSpec.of(model, config, new KvCacheConfig(64, 8, true)))) {
        var params = SamplingParams.greedy().toBuilder().ignoreEos(true).build();
        RequestStream decoding = engine.submit(GenerationRequest.of("decoding", randomPrompt(1, 6), params, 400));
        RequestStream prefilling = engine.submit(GenerationRequest.of("prefilling", randomPrompt(2, 300), params, 400));
        RequestStream waiting = engine.submit(GenerationRequest.of("waiting", randomPrompt(3, 10), params, 400));
        decoding.next(TIMEOUT); // "decoding" has a token; "prefilling" needs ≥ 19 steps at 16 tokens per step
        engine.abort("waiting");
        engine.abort("prefilling");
        engine.abort("decoding");
        for (RequestStream s : List.of(decoding, prefilling, waiting))
          assertThat(s.await(TIMEOUT).status()).isEqualTo(RequestStatus.FINISHED_ABORTED);
        EngineStats idle = awaitIdle(engine);
        assertThat(idle.kvCache().usedPages()).isZero();
        assertThat(idle.kvCache().freePages() + idle.kvCache().cachedPages()).isEqualTo(64);
      }
    }

    @Test
    void closingTheEngineAbortsWhatIsLive() throws Exception {
      DeepseekModel model = TinyModel.model(Precision.INT8);
      RequestStream stream;
      try (Engine engine = Engine.create(EngineSpec.of(model, ROOMY, new KvCacheConfig(64, 8, true)))) {
        stream = engine.submit(GenerationRequest.of("long", randomPrompt(4, 8),
            SamplingParams.greedy().toBuilder().ignoreEos(true).build(), 100_000));
        stream.next(TIMEOUT);
      }
      assertThat(stream.await(TIMEOUT).status()).isEqualTo(RequestStatus.FINISHED_ABORTED);
    }
  }

  @Nested
  class Submit {
    @Test
    void rejectsABadRequestOnTheCallersThreadAndServesTheRest() throws Exception {
      DeepseekModel model = TinyModel.model(Precision.INT8);
      try (Engine engine = Engine.create(EngineSpec.of(model, ROOMY, new KvCacheConfig(64, 8, true)))) {
        assertThatThrownBy(() -> engine.submit(GenerationRequest.of("bad", new int[] {3, 5000}, SamplingParams.greedy(), 4)))
            .isInstanceOf(IllegalArgumentException.class).hasMessage("request bad: prompt token id 5000 is outside the vocabulary [0, 1024)");
        assertThatThrownBy(() -> engine.submit(GenerationRequest.of("long", new int[513], SamplingParams.greedy(), 4)))
            .hasMessage("request long: the prompt has 513 tokens but the context holds at most 512");
        var endless = SamplingParams.greedy().toBuilder().ignoreEos(true).build();
        RequestStream busy = engine.submit(GenerationRequest.of("busy", randomPrompt(6, 7), endless, 100_000));
        assertThatThrownBy(() -> engine.submit(GenerationRequest.of("busy", randomPrompt(5, 7), SamplingParams.greedy(), 4)))
            .hasMessage("request id busy is already in use");
        RequestStream ok = engine.submit(GenerationRequest.of("ok", randomPrompt(5, 7), SamplingParams.greedy(), 4));
        var done = ok.await(TIMEOUT);
        engine.abort("busy");
        assertThat(busy.await(TIMEOUT).status()).isEqualTo(RequestStatus.FINISHED_ABORTED);
        assertThat(done.status()).isIn(RequestStatus.FINISHED_LENGTH, RequestStatus.FINISHED_STOPPED);
        assertThat(done.usage().promptTokens()).isEqualTo(7);
      }
    }
  }
}
