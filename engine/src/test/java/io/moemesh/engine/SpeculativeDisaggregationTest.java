package io.moemesh.engine;

import static io.moemesh.engine.EngineTest.TIMEOUT;
import static io.moemesh.engine.EngineTest.awaitIdle;
import static io.moemesh.engine.EngineTest.randomPrompt;
import static io.moemesh.engine.SpeculativeDecodingTest.chainReference;
import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.engine.kv.KvCacheManager;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.Precision;
import io.moemesh.model.sampling.Sampler;
import io.moemesh.model.sampling.SamplingParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * Speculative decoding across the prefill/decode handover: a speculating prefill exports the MTP layer's KV with the
 * main layers and hands over a greedy request's drafts; a speculating decode engine imports both, verifies those
 * drafts in its first step and keeps drafting over the imported MTP KV — with the tokens of one plain engine.
 */
class SpeculativeDisaggregationTest {
  static final KvCacheConfig CACHE = new KvCacheConfig(64, 8, true);
  static final SamplingParams GREEDY = SamplingParams.greedy().toBuilder().ignoreEos(true).build();
  static final int K = 2;

  static List<GenerationRequest> greedyRequests() {
    List<GenerationRequest> requests = new ArrayList<>();
    int[] lengths = {5, 19, 33, 40};
    for (int i = 0; i < lengths.length; i++) requests.add(GenerationRequest.of("s" + i, randomPrompt(40 + i, lengths[i]), GREEDY, 9 + 2 * i));
    return requests;
  }

  @Test
  void greedyRequestsSpeculateFromTheFirstDecodeStepWithTheTokensOfOnePlainEngine() throws Exception {
    DeepseekModel model = TinyModel.model(Precision.EXACT);
    int layers = model.config().numHiddenLayers();
    List<GenerationRequest> requests = greedyRequests();
    try (var store = new InMemoryKvConnector()) {
      Map<String, RequestStream.Completion> prefilled = new ConcurrentHashMap<>();
      try (Engine prefill = Engine.create(EngineSpec.of(model, SchedulerConfig.defaults().withMaxBatchedTokens(16), CACHE)
          .withConnector(store).withSpeculativeTokens(K))) {
        for (GenerationRequest r : requests)
          prefilled.put(r.id(), prefill.submit(new GenerationRequest(r.id(), r.promptTokenIds(), r.sampling(), 1, 0, KvHandoff.Export.FULL)).await(TIMEOUT));
        assertThat(awaitIdle(prefill).kvCache().usedPages()).isZero();
      }
      int rowBytes = model.config().latentDim() * model.precision().kvCacheDType().byteSize();
      for (GenerationRequest r : requests) {
        var done = prefilled.get(r.id());
        assertThat(done.status()).as(done.error()).isEqualTo(RequestStatus.FINISHED_LENGTH);
        var object = store.objects.get(r.id());
        assertThat(object.keySet()).as("the main layers, then the MTP layer").hasSize(layers + 1).contains(layers);
        assertThat(InMemoryKvConnector.rows(object, layers)).as("the MTP layer's rows of every prompt position")
            .hasSize(r.numPromptTokens() * rowBytes);
        int[] withFirst = Arrays.copyOf(r.promptTokenIds(), r.numPromptTokens() + 1);
        withFirst[r.numPromptTokens()] = done.tokenIds()[0];
        assertThat(done.drafts()).as("%s: the MTP module over the prompt, then chained", r.id())
            .containsExactly(Arrays.stream(chainReference(model, withFirst)).boxed().toArray(Integer[]::new));
      }

      Map<String, List<int[]>> proposals = new ConcurrentHashMap<>(); // request → [tokens so far, first draft]
      List<SchedulerOutput> plans = java.util.Collections.synchronizedList(new ArrayList<>());
      Map<String, RequestStream.Completion> decoded = new ConcurrentHashMap<>();
      try (Engine decode = decodeEngine(model, store, plans, proposals)) {
        List<RequestStream> streams = new ArrayList<>();
        for (GenerationRequest r : requests) {
          var p = prefilled.get(r.id());
          streams.add(decode.submit(r.withHandoff(new KvHandoff.Import(p.tokens().getFirst(), 0, KvHandoff.OnLoadFailure.FAIL, true, p.drafts()))));
        }
        for (RequestStream s : streams) decoded.put(s.requestId(), s.await(TIMEOUT));
        assertThat(awaitIdle(decode).kvCache().usedPages()).as("rejected drafts left no pages behind").isZero();
      }

      EngineTest.Run plain = EngineTest.alone(model, requests);
      for (GenerationRequest r : requests) {
        var d = decoded.get(r.id());
        assertThat(d.status()).as(d.error()).isEqualTo(RequestStatus.FINISHED_LENGTH);
        int[] all = new int[d.tokens().size() + 1];
        all[0] = prefilled.get(r.id()).tokenIds()[0];
        System.arraycopy(d.tokenIds(), 0, all, 1, d.tokens().size());
        assertThat(all).as("tokens of %s", r.id()).isEqualTo(plain.tokens(r.id()));
        ScheduledChunk first = plans.stream().flatMap(p -> p.chunks().stream()).filter(c -> c.requestId().equals(r.id())).findFirst().orElseThrow();
        assertThat(first.startPosition()).isEqualTo(r.numPromptTokens());
        assertThat(first.speculation().drafts()).extracting(Sampler.Draft::tokenId).as("%s verifies the handed-over drafts first", r.id())
            .containsExactlyElementsOf(prefilled.get(r.id()).drafts());
        assertThat(d.usage().draftTokens()).isPositive();

        int[] sequence = Arrays.copyOf(r.promptTokenIds(), r.numPromptTokens() + all.length);
        System.arraycopy(all, 0, sequence, r.numPromptTokens(), all.length);
        int checked = 0;
        for (int[] p : proposals.getOrDefault(r.id(), List.of())) {
          if (p[0] > sequence.length) continue;
          assertThat(p[1]).as("%s: the draft after %d tokens, over the imported MTP KV", r.id(), p[0])
              .isEqualTo(chainReference(model, Arrays.copyOf(sequence, p[0]))[0]);
          checked++;
        }
        assertThat(checked).as("%s drafted in decode", r.id()).isPositive();
      }
    }
  }

  /** A speculating decode engine over {@code store} that records its plans and each proposal's first draft. */
  private static Engine decodeEngine(DeepseekModel model, InMemoryKvConnector store, List<SchedulerOutput> plans,
      Map<String, List<int[]>> proposals) {
    var manager = new KvCacheManager(CACHE.numPages(), CACHE.pageSize(), model.modelId(), CACHE.prefixCaching(), true);
    var real = new DeepseekRunner(model, model.localExperts(), CACHE, store, null, 0, K);
    ModelRunner recording = new ModelRunner() {
      @Override
      public RunnerOutput execute(SchedulerOutput plan) {
        RunnerOutput out = real.execute(plan);
        if (!plan.chunks().isEmpty()) plans.add(plan);
        for (ScheduledChunk c : plan.chunks()) {
          List<Sampler.Draft> d = out.drafts().get(c.requestId());
          if (d == null || d.isEmpty()) continue;
          int numTokens = c.startPosition() + c.numTokens() - c.numDraftTokens() + out.acceptedOf(c.requestId()).size() + 1;
          proposals.computeIfAbsent(c.requestId(), x -> java.util.Collections.synchronizedList(new ArrayList<>()))
              .add(new int[] {numTokens, d.getFirst().tokenId()});
        }
        return out;
      }

      @Override
      public KvConnector.KvSink kvSink(int[] blockTable, int numTokens, boolean withMtpLayer) {
        return real.kvSink(blockTable, numTokens, withMtpLayer);
      }

      @Override
      public void close() {
        real.close();
      }
    };
    var scheduler = new Scheduler(SchedulerConfig.defaults(), manager, ModelLimits.of(model.config()), K);
    return new Engine(new EngineCore(scheduler, recording, manager, store), "decode-spec-test");
  }
}
