package io.moemesh.engine;

import static io.moemesh.engine.EngineTest.TIMEOUT;
import static io.moemesh.engine.EngineTest.alone;
import static io.moemesh.engine.EngineTest.awaitIdle;
import static io.moemesh.engine.EngineTest.mixedRequests;
import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.model.DeepseekModel;
import io.moemesh.model.Precision;
import io.moemesh.model.sampling.SampledToken;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/** A prefill engine exporting prompt KV layer by layer, a decode engine importing it: the tokens of one engine. */
class DisaggregationTest {
  static final KvCacheConfig CACHE = new KvCacheConfig(64, 8, true);

  record Prefilled(SampledToken first, int draws) {}

  /** Every request through a prefill engine (chunks of 16 tokens, so each layer is exported in several pieces). */
  static Map<String, Prefilled> prefill(DeepseekModel model, InMemoryKvConnector store, List<GenerationRequest> requests) throws Exception {
    Map<String, Prefilled> first = new ConcurrentHashMap<>();
    try (Engine prefill = Engine.create(EngineSpec.of(model, SchedulerConfig.defaults().withMaxBatchedTokens(16), CACHE).withConnector(store))) {
      List<RequestStream> streams = new ArrayList<>();
      for (GenerationRequest r : requests)
        streams.add(prefill.submit(new GenerationRequest(r.id(), r.promptTokenIds(), r.sampling(), 1, 0, KvHandoff.Export.FULL)));
      for (RequestStream s : streams) {
        var done = s.await(TIMEOUT);
        first.put(done.requestId(), new Prefilled(done.tokens().getFirst(), done.tokens().size()));
      }
      assertThat(awaitIdle(prefill).kvCache().usedPages()).isZero();
    }
    return first;
  }

  static GenerationRequest decodeLeg(GenerationRequest r, Prefilled p, KvHandoff.OnLoadFailure onFailure) {
    int draws = r.sampling().isGreedy() ? 0 : 1;
    return r.withHandoff(new KvHandoff.Import(p.first(), draws, onFailure));
  }

  @Test
  void prefillThenDecodeGivesTheTokensAndLogitsOfOneEngine() throws Exception {
    DeepseekModel model = TinyModel.model(Precision.INT8);
    List<GenerationRequest> requests = mixedRequests();
    try (var store = new InMemoryKvConnector()) {
      Map<String, Prefilled> first = prefill(model, store, requests);
      assertThat(store.objects.get("r3").get(0)).as("layer 0 of a 40-token prompt in chunks").hasSizeGreaterThan(1);
      Map<String, Map<Integer, float[]>> logits = new ConcurrentHashMap<>();
      Map<String, int[]> tokens = new ConcurrentHashMap<>();
      try (Engine decode = Engine.create(EngineSpec.of(model, SchedulerConfig.defaults(), CACHE).withConnector(store)
          .withObserver((id, position, row) -> logits.computeIfAbsent(id, k -> new ConcurrentHashMap<>()).put(position, row)))) {
        List<RequestStream> streams = new ArrayList<>();
        for (GenerationRequest r : requests) streams.add(decode.submit(decodeLeg(r, first.get(r.id()), KvHandoff.OnLoadFailure.FAIL)));
        for (RequestStream s : streams) {
          var done = s.await(TIMEOUT);
          assertThat(done.status()).as(done.error()).isEqualTo(RequestStatus.FINISHED_LENGTH);
          int[] all = new int[done.tokens().size() + 1];
          all[0] = first.get(done.requestId()).first().tokenId();
          System.arraycopy(done.tokenIds(), 0, all, 1, done.tokens().size());
          tokens.put(done.requestId(), all);
        }
        assertThat(awaitIdle(decode).kvCache().usedPages()).isZero();
      }
      EngineTest.Run single = alone(model, requests);
      for (GenerationRequest r : requests) {
        assertThat(tokens.get(r.id())).as("tokens of %s", r.id()).isEqualTo(single.tokens(r.id()));
        for (var e : logits.get(r.id()).entrySet())
          assertThat(e.getValue()).as("logits of %s at %d", r.id(), e.getKey()).isEqualTo(single.logits().get(r.id()).get(e.getKey()));
      }
    }
  }

  /**
   * A prefill engine that reuses KV it did not compute — a prefix in its own cache, or one loaded from the store
   * — hands over the same object, and samples the same first token, as a cold prefill; a prefix that cannot be
   * loaded is computed instead.
   */
  @Test
  void aPrefixFromTheCacheOrTheStoreGivesTheObjectAndFirstTokenOfAColdPrefill() throws Exception {
    DeepseekModel model = TinyModel.model(Precision.INT8);
    var greedy = io.moemesh.model.sampling.SamplingParams.greedy().toBuilder().ignoreEos(true).build();
    int[] shared = EngineTest.randomPrompt(7, 40);
    int[] longer = java.util.Arrays.copyOf(shared, 53);
    System.arraycopy(EngineTest.randomPrompt(8, 13), 0, longer, 40, 13);
    try (var store = new InMemoryKvConnector()) {
      var cold = exportInTurn(model, store, export("cold", longer, greedy, 0)).getFirst();
      var cached = exportInTurn(model, store, export("base", shared, greedy, 0), export("cached", longer, greedy, 0)).getLast();
      store.prefixSource.put("loaded", "base");
      store.prefixSource.put("fallback", "base");
      store.lost.add("fallback");
      var loaded = exportInTurn(model, store, export("loaded", longer, greedy, 40)).getFirst();
      var fallback = exportInTurn(model, store, export("fallback", longer, greedy, 40)).getFirst();
      // the engine's own cache beats a shorter stored prefix: nothing is loaded
      store.prefixSource.put("short", "base");
      store.lost.add("short");
      var shortStored = exportInTurn(model, store, export("base", shared, greedy, 0), export("short", longer, greedy, 16)).getLast();

      for (var done : List.of(cached, loaded, fallback, shortStored)) {
        assertThat(done.status()).as(done.requestId() + ": " + done.error()).isEqualTo(RequestStatus.FINISHED_LENGTH);
        assertThat(done.tokenIds()).as(done.requestId()).isEqualTo(cold.tokenIds());
        var object = store.objects.get(done.requestId());
        assertThat(object.keySet()).as(done.requestId()).isEqualTo(store.objects.get("cold").keySet());
        for (int layer : object.keySet())
          assertThat(InMemoryKvConnector.rows(object, layer)).as("%s layer %d", done.requestId(), layer)
              .isEqualTo(InMemoryKvConnector.rows(store.objects.get("cold"), layer));
      }
      assertThat(cached.usage().cachedPromptTokens()).as("5 pages of 8 in the engine's cache").isEqualTo(40);
      assertThat(loaded.usage().cachedPromptTokens()).as("5 pages of 8 from the store").isEqualTo(40);
      assertThat(fallback.usage().cachedPromptTokens()).as("the load failed: computed here").isZero();
      assertThat(shortStored.usage().cachedPromptTokens()).isEqualTo(40);
    }
  }

  private static GenerationRequest export(String id, int[] prompt, io.moemesh.model.sampling.SamplingParams sampling, int storedPrefix) {
    return new GenerationRequest(id, prompt, sampling, 1, 0, new KvHandoff.Export(storedPrefix));
  }

  /** The requests one after another through one prefill engine (16-token chunks), which ends with every page free. */
  private static List<RequestStream.Completion> exportInTurn(DeepseekModel model, InMemoryKvConnector store, GenerationRequest... requests)
      throws Exception {
    List<RequestStream.Completion> done = new ArrayList<>();
    try (Engine prefill = Engine.create(EngineSpec.of(model, SchedulerConfig.defaults().withMaxBatchedTokens(16), CACHE).withConnector(store))) {
      for (GenerationRequest r : requests) done.add(prefill.submit(r).await(TIMEOUT));
      assertThat(awaitIdle(prefill).kvCache().usedPages()).isZero();
    }
    return done;
  }

  @Test
  void aLostObjectFailsTheRequestOrIsRecomputedAsConfigured() throws Exception {
    DeepseekModel model = TinyModel.model(Precision.INT8);
    List<GenerationRequest> requests = mixedRequests().subList(0, 2);
    try (var store = new InMemoryKvConnector()) {
      Map<String, Prefilled> first = prefill(model, store, requests);
      store.lost.add("r0");
      store.lost.add("r1");
      try (Engine decode = Engine.create(EngineSpec.of(model, SchedulerConfig.defaults(), CACHE).withConnector(store))) {
        var failed = decode.submit(decodeLeg(requests.get(0), first.get("r0"), KvHandoff.OnLoadFailure.FAIL)).await(TIMEOUT);
        assertThat(failed.status()).isEqualTo(RequestStatus.FINISHED_ERROR);
        assertThat(failed.error()).isEqualTo("the prompt's KV could not be loaded: object r0 is gone");
        var recomputed = decode.submit(decodeLeg(requests.get(1), first.get("r1"), KvHandoff.OnLoadFailure.RECOMPUTE)).await(TIMEOUT);
        assertThat(recomputed.status()).isEqualTo(RequestStatus.FINISHED_LENGTH);
        int[] expected = alone(model, List.of(requests.get(1))).tokens("r1");
        assertThat(recomputed.tokenIds()).isEqualTo(java.util.Arrays.copyOfRange(expected, 1, expected.length));
        assertThat(awaitIdle(decode).kvCache().usedPages()).isZero();
      }
    }
  }

  @Test
  void abortWhileTheKvIsArrivingKeepsItsPagesUntilTheLoadEnds() throws Exception {
    DeepseekModel model = TinyModel.model(Precision.INT8);
    GenerationRequest request = mixedRequests().get(3);
    try (var store = new InMemoryKvConnector()) {
      Map<String, Prefilled> first = prefill(model, store, List.of(request));
      store.held.add(request.id());
      try (Engine decode = Engine.create(EngineSpec.of(model, SchedulerConfig.defaults(), CACHE).withConnector(store))) {
        RequestStream stream = decode.submit(decodeLeg(request, first.get(request.id()), KvHandoff.OnLoadFailure.FAIL));
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (decode.stats().numLoadingKv() == 0 && System.nanoTime() < deadline) Thread.onSpinWait();
        assertThat(decode.stats().numLoadingKv()).isOne();
        decode.abort(request.id());
        assertThat(stream.await(TIMEOUT).status()).isEqualTo(RequestStatus.FINISHED_ABORTED);
        while (decode.stats().numLoadingKv() == 1 && System.nanoTime() < deadline) Thread.onSpinWait();
        assertThat(decode.stats().kvCache().usedPages()).as("the loader may still write them").isEqualTo(6); // 41 tokens / 8
        store.release(request.id());
        assertThat(awaitIdle(decode).kvCache().usedPages()).isZero();
      }
    }
  }
}
