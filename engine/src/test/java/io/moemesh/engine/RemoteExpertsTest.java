package io.moemesh.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.engine.experts.DispatchingExperts;
import io.moemesh.kernels.DType;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.ExpertWeights;
import io.moemesh.model.LocalExperts;
import io.moemesh.model.Precision;
import io.moemesh.model.moe.ExpertSelection;
import io.moemesh.model.moe.Placement;
import io.moemesh.model.sampling.SamplingParams;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Expert parallelism's identity: attention here (no routed experts loaded), routed experts on two shards with
 * redundant hot slots, shared experts elsewhere — the same tokens and bit-identical logits as one process.
 */
class RemoteExpertsTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);

  @ParameterizedTest
  @EnumSource(Precision.class)
  void routedShardsAndARemoteSharedServiceGiveTheBitsOfInProcessExperts(Precision precision) throws Exception {
    var requests = EngineTest.mixedRequests();
    var expected = EngineTest.run(TinyModel.model(precision), EngineTest.ROOMY, new KvCacheConfig(64, 8, true), requests);
    try (var attention = attentionOnly(precision, ExpertSelection.NONE)) {
      Placement placement = ExpertWeights.initialPlacement(attention.config(), 2, 2);
      var shards = shards(precision, placement, i -> ExpertSelection.shard(placement, i));
      try (var shared = ExpertWeights.load(TinyModel.checkpoint(), precision, TinyModel.kernels(), ExpertSelection.SHARED_ONLY, null)) {
        var transport = new InProcessExpertTransport(TinyModel.kernels(), experts(shards), shared.experts());
        var remote = new DispatchingExperts(transport, placement, null, precision == Precision.INT8, TIMEOUT);
        var actual = EngineTest.run(attention, remote, SchedulerConfig.defaults().withMaxBatchedTokens(19), new KvCacheConfig(64, 8, true), requests);
        EngineTest.assertSameTokensAndLogits(actual, expected);
        assertThat(transport.sent).extracting(InProcessExpertTransport.Sent::shard).as("both shards worked").contains(0, 1);
        assertThat(transport.sent).extracting(InProcessExpertTransport.Sent::hiddenType).as("low-bit dispatch under A8W8")
            .containsOnly(precision == Precision.INT8 ? DType.I8 : DType.F32);
      } finally {
        for (var s : shards) s.close();
      }
    }
  }

  /**
   * Two micro-batches per step (from 2 tokens on): each sends its dispatches when it starts a layer, so one's
   * experts work while the other computes attention — and the result is still the bits of one process.
   */
  @ParameterizedTest
  @EnumSource(Precision.class)
  void overlappedMicroBatchesGiveTheBitsOfInProcessExperts(Precision precision) throws Exception {
    var requests = EngineTest.mixedRequests();
    var scheduler = SchedulerConfig.defaults().withMaxBatchedTokens(19);
    var expected = EngineTest.run(TinyModel.model(precision), TinyModel.model(precision).localExperts(), scheduler, new KvCacheConfig(64, 8, true),
        requests, 0);
    try (var attention = attentionOnly(precision, ExpertSelection.NONE)) {
      Placement placement = ExpertWeights.initialPlacement(attention.config(), 2, 2);
      var shards = shards(precision, placement, i -> ExpertSelection.shard(placement, i));
      try (var shared = ExpertWeights.load(TinyModel.checkpoint(), precision, TinyModel.kernels(), ExpertSelection.SHARED_ONLY, null)) {
        var transport = new InProcessExpertTransport(TinyModel.kernels(), experts(shards), shared.experts());
        var remote = new RecordingExperts(new DispatchingExperts(transport, placement, null, precision == Precision.INT8, TIMEOUT));
        transport.beforeDispatch = n -> remote.log.add(new RecordingExperts.Event("send", -1, 0));
        var actual = EngineTest.run(attention, remote, scheduler, new KvCacheConfig(64, 8, true), requests, 2);
        EngineTest.assertSameTokensAndLogits(actual, expected);
        var passes = remote.passes(MicroBatchOverlapTest.FIRST_MOE_LAYER);
        assertThat(passes.stream().filter(RecordingExperts.Pass::overlapped).count()).as("overlapped steps").isGreaterThan(passes.size() / 2);
        var log = List.copyOf(remote.log);
        assertThat(IntStream.range(0, log.size()).filter(i -> log.get(i).kind().equals("send"))
            .mapToObj(i -> lastNonSend(log, i).kind())).as("what each dispatch follows").isNotEmpty().containsOnly("start");
      } finally {
        for (var s : shards) s.close();
      }
    }
  }

  /** The MTP layer's experts are dispatched like any MoE layer's: speculation on expert shards keeps the greedy tokens. */
  @Test
  void speculativeDecodingOnExpertShardsKeepsTheTokens() throws Exception {
    Precision precision = Precision.INT8;
    var requests = SpeculativeDecodingTest.greedyRequests(null);
    var expected = EngineTest.run(TinyModel.model(precision), EngineTest.ROOMY, new KvCacheConfig(64, 8, true), requests);
    try (var attention = attentionOnly(precision, ExpertSelection.NONE)) {
      Placement placement = ExpertWeights.initialPlacement(attention.config(), 2, 2);
      var shards = shards(precision, placement, i -> ExpertSelection.shard(placement, i));
      try (var shared = ExpertWeights.load(TinyModel.checkpoint(), precision, TinyModel.kernels(), ExpertSelection.SHARED_ONLY, null)) {
        var transport = new InProcessExpertTransport(TinyModel.kernels(), experts(shards), shared.experts());
        var remote = new DispatchingExperts(transport, placement, null, true, TIMEOUT);
        try (Engine engine = Engine.create(EngineSpec.of(attention, SchedulerConfig.defaults().withMaxBatchedTokens(19), new KvCacheConfig(64, 8, true))
            .withExperts(remote).withSpeculativeTokens(2))) {
          List<RequestStream> streams = engine.submitAll(requests);
          for (RequestStream stream : streams)
            assertThat(stream.await(TIMEOUT).tokenIds()).as(stream.requestId()).isEqualTo(expected.tokens(stream.requestId()));
          assertThat(EngineTest.awaitIdle(engine).speculation().numDraftTokens()).isPositive();
        }
        int mtpLayer = attention.config().numHiddenLayers();
        assertThat(transport.sent).extracting(InProcessExpertTransport.Sent::layerId).as("the MTP layer's experts were dispatched").contains(mtpLayer);
      } finally {
        for (var s : shards) s.close();
      }
    }
  }

  private static RecordingExperts.Event lastNonSend(List<RecordingExperts.Event> log, int i) {
    while (log.get(i).kind().equals("send")) i--;
    return log.get(i);
  }

  @Test
  void aNewPlacementTakesEffectAtAStepBoundaryAndChangesNoToken() throws Exception {
    Precision precision = Precision.INT8;
    List<GenerationRequest> requests = new ArrayList<>();
    for (int i = 0; i < 4; i++)
      requests.add(GenerationRequest.of("p" + i, EngineTest.randomPrompt(40 + i, 12 + 5 * i), SamplingParams.greedy().toBuilder().ignoreEos(true).build(), 24));
    var expected = EngineTest.run(TinyModel.model(precision), EngineTest.ROOMY, new KvCacheConfig(64, 8, true), requests);
    try (var attention = attentionOnly(precision, ExpertSelection.SHARED_ONLY)) {
      Placement first = ExpertWeights.initialPlacement(attention.config(), 2, 0);
      Placement second = reversed(first);
      var shards = shards(precision, first, i -> ExpertSelection.ALL); // both hold every expert: either placement works
      try {
        var transport = new InProcessExpertTransport(TinyModel.kernels(), experts(shards), null);
        var remote = new DispatchingExperts(transport, first, attention.localExperts(), true, TIMEOUT);
        transport.beforeDispatch = n -> {
          if (n == 40) remote.usePlacement(second); // mid-run, inside a forward pass
        };
        var actual = EngineTest.run(attention, remote, EngineTest.ROOMY, new KvCacheConfig(64, 8, true), requests);
        EngineTest.assertSameTokensAndLogits(actual, expected);
        var versions = transport.sent.stream().mapToLong(InProcessExpertTransport.Sent::placementVersion).toArray();
        int switched = IntStream.range(0, versions.length).filter(i -> versions[i] == 1).findFirst().orElseThrow();
        assertThat(switched).as("the switch waits for the step boundary").isGreaterThan(40);
        assertThat(transport.sent.get(switched).layerId()).as("a step starts at the first MoE layer")
            .isEqualTo(IntStream.range(0, 99).filter(first::isMoeLayer).findFirst().orElseThrow());
        assertThat(IntStream.range(switched, versions.length).allMatch(i -> versions[i] == 1)).isTrue();
      } finally {
        for (var s : shards) s.close();
      }
    }
  }

  /** A placement arriving between the two micro-batches of a step: the second keeps the first's, the next step switches. */
  @Test
  void aPlacementArrivingBetweenTwoMicroBatchesWaitsForTheNextStep() throws Exception {
    Precision precision = Precision.INT8;
    List<GenerationRequest> requests = new ArrayList<>();
    for (int i = 0; i < 4; i++)
      requests.add(GenerationRequest.of("p" + i, EngineTest.randomPrompt(40 + i, 12 + 5 * i), SamplingParams.greedy().toBuilder().ignoreEos(true).build(), 8));
    var expected = EngineTest.run(TinyModel.model(precision), EngineTest.ROOMY, new KvCacheConfig(64, 8, true), requests);
    try (var attention = attentionOnly(precision, ExpertSelection.SHARED_ONLY)) {
      Placement first = ExpertWeights.initialPlacement(attention.config(), 2, 0);
      var shards = shards(precision, first, i -> ExpertSelection.ALL);
      try {
        var transport = new InProcessExpertTransport(TinyModel.kernels(), experts(shards), null);
        var dispatching = new DispatchingExperts(transport, first, attention.localExperts(), true, TIMEOUT);
        var remote = new RecordingExperts(dispatching);
        int firstMoeLayer = MicroBatchOverlapTest.FIRST_MOE_LAYER;
        int[] firstLayerStarts = {0};
        remote.afterStart = e -> {
          if (e.layerId() == firstMoeLayer && ++firstLayerStarts[0] == 5) dispatching.usePlacement(reversed(first)); // step 3, first micro-batch
        };
        var actual = EngineTest.run(attention, remote, EngineTest.ROOMY, new KvCacheConfig(64, 8, true), requests, 2);
        EngineTest.assertSameTokensAndLogits(actual, expected);
        assertThat(remote.passes(firstMoeLayer)).as("every step overlapped").allMatch(RecordingExperts.Pass::overlapped);
        var sent = transport.sent;
        int switched = IntStream.range(0, sent.size()).filter(i -> sent.get(i).placementVersion() == 1).findFirst().orElseThrow();
        assertThat(IntStream.range(0, switched).filter(i -> sent.get(i).layerId() == firstMoeLayer && (i == 0 || sent.get(i - 1).layerId() != firstMoeLayer)))
            .as("steps that began under the old placement").hasSize(3);
        assertThat(sent.get(switched - 1).layerId()).as("the dispatch before the switch: the last MoE layer of a step, not a first micro-batch's first")
            .isNotEqualTo(firstMoeLayer);
        assertThat(IntStream.range(switched, sent.size()).allMatch(i -> sent.get(i).placementVersion() == 1)).isTrue();
      } finally {
        for (var s : shards) s.close();
      }
    }
  }

  @Nested
  class Faults {
    private final List<GenerationRequest> requests = List.of(
        GenerationRequest.of("f0", EngineTest.randomPrompt(60, 14), SamplingParams.greedy().toBuilder().ignoreEos(true).build(), 16),
        GenerationRequest.of("f1", EngineTest.randomPrompt(61, 9), SamplingParams.greedy().toBuilder().ignoreEos(true).build(), 16));

    @Test
    void aDeadShardsTokensGoToReplicasElsewhereAndNothingChanges() throws Exception {
      var expected = EngineTest.run(TinyModel.model(Precision.INT8), EngineTest.ROOMY, new KvCacheConfig(64, 8, true), requests);
      try (var attention = attentionOnly(Precision.INT8, ExpertSelection.SHARED_ONLY)) {
        int experts = attention.config().nRoutedExperts();
        Placement everywhere = ExpertWeights.initialPlacement(attention.config(), 2, experts); // each expert on both shards
        var shards = shards(Precision.INT8, everywhere, i -> ExpertSelection.shard(everywhere, i));
        try {
          var transport = new InProcessExpertTransport(TinyModel.kernels(), experts(shards), null);
          transport.beforeDispatch = n -> {
            if (n == 30) transport.dead.add(1); // mid-run: shard 1's process dies
          };
          var remote = new DispatchingExperts(transport, everywhere, attention.localExperts(), true, Duration.ofSeconds(5));
          var actual = EngineTest.run(attention, remote, EngineTest.ROOMY, new KvCacheConfig(64, 8, true), requests);
          EngineTest.assertSameTokensAndLogits(actual, expected);
          var sent = transport.sent;
          assertThat(sent.subList(0, 30)).extracting(InProcessExpertTransport.Sent::shard).as("both worked before").contains(0, 1);
          assertThat(sent.subList(31, sent.size())).extracting(InProcessExpertTransport.Sent::shard)
              .as("after its one failed call, shard 1 is passed over").containsOnly(0);
        } finally {
          for (var s : shards) s.close();
        }
      }
    }

    @Test
    void anExpertWithoutAnotherReplicaWaitsForItsShardThenFailsNamingIt() throws Exception {
      var expected = EngineTest.run(TinyModel.model(Precision.INT8), EngineTest.ROOMY, new KvCacheConfig(64, 8, true), requests);
      try (var attention = attentionOnly(Precision.INT8, ExpertSelection.SHARED_ONLY)) {
        Placement single = ExpertWeights.initialPlacement(attention.config(), 2, 0); // no redundant slots
        var shards = shards(Precision.INT8, single, i -> ExpertSelection.shard(single, i));
        try {
          // back within the wait: the step goes on with the bits of one process
          var transport = new InProcessExpertTransport(TinyModel.kernels(), experts(shards), null);
          int[] attempts = new int[1];
          transport.beforeDispatch = n -> {
            if (n == 20) transport.dead.add(1);
            if (transport.dead.contains(1) && ++attempts[0] == 6) transport.dead.remove(1); // restarted
          };
          var remote = new DispatchingExperts(transport, single, attention.localExperts(), true, Duration.ofSeconds(20));
          EngineTest.assertSameTokensAndLogits(EngineTest.run(attention, remote, EngineTest.ROOMY, new KvCacheConfig(64, 8, true), requests), expected);

          // gone for good: the requests finish with an error naming the shard, within the timeout
          var down = new InProcessExpertTransport(TinyModel.kernels(), experts(shards), null);
          down.dead.add(1);
          var failing = new DispatchingExperts(down, single, attention.localExperts(), true, Duration.ofMillis(1500));
          try (Engine engine = Engine.create(EngineSpec.of(attention, EngineTest.ROOMY, new KvCacheConfig(64, 8, true)).withExperts(failing))) {
            var done = engine.submit(requests.get(0)).await(Duration.ofSeconds(60));
            assertThat(done.status()).isEqualTo(RequestStatus.FINISHED_ERROR);
            assertThat(done.error()).contains("routed shard 1").contains("UNAVAILABLE");
          }
        } finally {
          for (var s : shards) s.close();
        }
      }
    }
  }

  /** A routed shard lost for good: its experts come back through a newer placement, or the step fails at its deadline. */
  @Nested
  class ShardLoss {
    private final List<GenerationRequest> requests = List.of(
        GenerationRequest.of("l0", EngineTest.randomPrompt(70, 12), SamplingParams.greedy().toBuilder().ignoreEos(true).build(), 16),
        GenerationRequest.of("l1", EngineTest.randomPrompt(71, 7), SamplingParams.greedy().toBuilder().ignoreEos(true).build(), 16));

    @Test
    void aLostShardsExpertsAreServedWhereTheNewerPlacementHostsThemWithTheSameBits() throws Exception {
      var expected = EngineTest.run(TinyModel.model(Precision.INT8), EngineTest.ROOMY, new KvCacheConfig(64, 8, true), requests);
      try (var attention = attentionOnly(Precision.INT8, ExpertSelection.SHARED_ONLY)) {
        Placement single = ExpertWeights.initialPlacement(attention.config(), 2, 0); // no copies: shard 1's experts are nowhere else
        Placement hosted = single.hostedOn(new int[single.numSlots()], 1); // the coordinator's failover: every slot on shard 0
        var shards = shards(Precision.INT8, single, i -> ExpertSelection.shard(i == 0 ? hosted : single, i));
        try {
          var transport = new InProcessExpertTransport(TinyModel.kernels(), experts(shards), null);
          var remote = new DispatchingExperts(transport, single, attention.localExperts(), true, Duration.ofSeconds(30), Duration.ofSeconds(20));
          var retries = new RecordedRetries();
          remote.onRetry(retries);
          List<String> retried = retries.retried, failed = retries.failed;
          int[] afterDeath = new int[1];
          transport.beforeDispatch = n -> {
            if (n == 20) transport.dead.add(1); // shard 1's process dies, for good
            if (transport.dead.contains(1) && ++afterDeath[0] == 4) remote.usePlacement(hosted); // the published failover arrives
          };
          var actual = EngineTest.run(attention, remote, EngineTest.ROOMY, new KvCacheConfig(64, 8, true), requests);
          EngineTest.assertSameTokensAndLogits(actual, expected);
          assertThat(retried).as("the in-flight step retried").isNotEmpty().allSatisfy(why -> assertThat(why).contains("routed shard 1"));
          assertThat(failed).isEmpty();
          var sent = transport.sent;
          assertThat(sent.subList(20, sent.size())).extracting(InProcessExpertTransport.Sent::shard).as("only the live shard, after").containsOnly(0);
          assertThat(sent).extracting(InProcessExpertTransport.Sent::placementVersion).as("the retries used the newer placement").contains(1L);
        } finally {
          for (var s : shards) s.close();
        }
      }
    }

    @Test
    void aHungShardIsGivenUpAsSoonAsANewerPlacementHostsNothingOnItNotAfterTheLayerTimeout() throws Exception {
      var expected = EngineTest.run(TinyModel.model(Precision.INT8), EngineTest.ROOMY, new KvCacheConfig(64, 8, true), requests);
      try (var attention = attentionOnly(Precision.INT8, ExpertSelection.SHARED_ONLY)) {
        Placement single = ExpertWeights.initialPlacement(attention.config(), 2, 0);
        Placement hosted = single.hostedOn(new int[single.numSlots()], 1); // the coordinator found shard 1 lost: all on shard 0
        var shards = shards(Precision.INT8, single, i -> ExpertSelection.shard(i == 0 ? hosted : single, i));
        try {
          var transport = new InProcessExpertTransport(TinyModel.kernels(), experts(shards), null);
          // a layer timeout far beyond the test's patience: only the newer placement can end the wait
          var remote = new DispatchingExperts(transport, single, attention.localExperts(), true, Duration.ofHours(1), Duration.ofSeconds(20));
          var retries = new RecordedRetries();
          remote.onRetry(retries);
          List<String> retried = retries.retried, failed = retries.failed;
          transport.beforeDispatch = n -> {
            if (n == 20 && transport.hung.add(1)) // shard 1 stops answering (SIGSTOP); the failover's placement comes later
              Thread.ofVirtual().start(() -> {
                while (transport.unanswered.isEmpty()) Thread.onSpinWait();
                remote.usePlacement(hosted);
              });
          };
          var actual = EngineTest.run(attention, remote, EngineTest.ROOMY, new KvCacheConfig(64, 8, true), requests);
          EngineTest.assertSameTokensAndLogits(actual, expected);
          assertThat(transport.unanswered).as("the step waited on the hung shard").isNotEmpty()
              .allSatisfy(call -> assertThat(call.isCancelled()).as("and gave it up").isTrue());
          assertThat(retried).isNotEmpty().first().asString().contains("routed shard 1 did not answer")
              .contains("placement version 1 hosts nothing on it");
          assertThat(failed).isEmpty();
        } finally {
          for (var s : shards) s.close();
        }
      }
    }

    @Test
    void withoutANewerPlacementTheRequestsFailAtTheStepDeadlineNamingTheLoss() throws Exception {
      try (var attention = attentionOnly(Precision.INT8, ExpertSelection.SHARED_ONLY)) {
        Placement single = ExpertWeights.initialPlacement(attention.config(), 2, 0);
        var shards = shards(Precision.INT8, single, i -> ExpertSelection.shard(single, i));
        try {
          var down = new InProcessExpertTransport(TinyModel.kernels(), experts(shards), null);
          down.dead.add(1);
          // a long layer timeout, a short step deadline: the deadline decides
          var failing = new DispatchingExperts(down, single, attention.localExperts(), true, Duration.ofMinutes(5), Duration.ofMillis(1200));
          try (Engine engine = Engine.create(EngineSpec.of(attention, EngineTest.ROOMY, new KvCacheConfig(64, 8, true)).withExperts(failing))) {
            var first = engine.submit(requests.get(0));
            var second = engine.submit(requests.get(1));
            for (var done : List.of(first.await(Duration.ofSeconds(60)), second.await(Duration.ofSeconds(60)))) {
              assertThat(done.status()).isEqualTo(RequestStatus.FINISHED_ERROR);
              assertThat(done.error()).contains(DispatchingExperts.SHARD_LOSS).contains("step deadline of 1200 ms")
                  .contains("routed shard 1").contains("UNAVAILABLE");
            }
          }
        } finally {
          for (var s : shards) s.close();
        }
      }
    }
  }

  /** What a {@link DispatchingExperts} reported of its retries: each redispatch's reason, each failed step's. */
  private static final class RecordedRetries implements DispatchingExperts.RetryListener {
    final List<String> retried = new java.util.concurrent.CopyOnWriteArrayList<>(), failed = new java.util.concurrent.CopyOnWriteArrayList<>();

    @Override
    public void redispatched(int layerId, int assignments, String why) {
      retried.add(why);
    }

    @Override
    public void stepFailed(String why) {
      failed.add(why);
    }
  }

  private static DeepseekModel attentionOnly(Precision precision, ExpertSelection selection) {
    return DeepseekModel.load(TinyModel.checkpoint(), precision, TinyModel.kernels(), selection, null);
  }

  private static ExpertWeights[] shards(Precision precision, Placement placement, java.util.function.IntFunction<ExpertSelection> selection) {
    var shards = new ExpertWeights[placement.numShards()];
    for (int i = 0; i < shards.length; i++)
      shards[i] = ExpertWeights.load(TinyModel.checkpoint(), precision, TinyModel.kernels(), selection.apply(i), null);
    return shards;
  }

  private static LocalExperts[] experts(ExpertWeights[] shards) {
    var out = new LocalExperts[shards.length];
    for (int i = 0; i < shards.length; i++) out[i] = shards[i].experts();
    return out;
  }

  /** The same experts, shards swapped: every slot moves to the other shard. */
  private static Placement reversed(Placement p) {
    int[][] map = new int[p.numLayers()][];
    for (int layer = 0; layer < map.length; layer++) {
      if (!p.isMoeLayer(layer)) continue;
      int[] old = p.physicalToLogical(layer);
      map[layer] = new int[old.length];
      for (int s = 0; s < old.length; s++) map[layer][s] = old[(s + p.slotsPerShard()) % old.length];
    }
    return Placement.of(p.version() + 1, p.numShards(), p.numExperts(), map);
  }
}
