package io.moemesh.expert;

import static io.restassured.RestAssured.get;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.ExpertWeights;
import io.moemesh.model.ModelConfig;
import io.moemesh.model.ModelConfigReader;
import io.moemesh.model.moe.Placement;
import io.moemesh.model.moe.ExpertDispatch;
import io.moemesh.proto.expert.v1.CombineFrame;
import io.moemesh.proto.expert.v1.DispatchFrame;
import io.moemesh.proto.expert.v1.Experts;
import io.moemesh.proto.expert.v1.ExpertServiceInfo;
import io.moemesh.proto.expert.v1.InfoRequest;
import io.moemesh.proto.expert.v1.PlacementTable;
import io.moemesh.proto.tensor.WireTensors;
import io.moemesh.telemetry.testing.Scrape;
import io.quarkus.grpc.GrpcClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.smallrye.mutiny.Multi;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Shard 0 of 2 runs the balancer every 200 ms over itself and a fake shard 1 ({@link FakePeerShard}), all over
 * real gRPC: tokens piled on one expert move experts on both shards before the new placement is published in
 * Info, and a shard that cannot prepare leaves the active placement as it was.
 */
@QuarkusTest
@TestProfile(BalancerLoopTest.Balancing.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class BalancerLoopTest {
  static final Duration TIMEOUT = Duration.ofSeconds(60);
  static ModelConfig config;
  static Placement initial;
  static int layer;

  public static class Balancing implements QuarkusTestProfile {
    @Override
    public Map<String, String> getConfigOverrides() {
      return Map.of("moemesh.expert.balancer.interval", "200ms", "moemesh.expert.balancer.settle", "300ms",
          "moemesh.expert.balancer.min-tokens", "64");
    }

    @Override
    public List<TestResourceEntry> testResources() {
      return List.of(new TestResourceEntry(FakePeerShard.class));
    }
  }

  @GrpcClient("experts")
  Experts experts;

  @BeforeAll
  static void model() {
    config = ModelConfigReader.read(TinyExpertsResource.checkpoint().resolve("config.json"));
    initial = ExpertWeights.initialPlacement(config, 2, 2);
    layer = IntStream.range(0, 99).filter(config::isMoeLayer).findFirst().orElseThrow();
  }

  @BeforeEach
  void awaitReady() {
    await().atMost(TIMEOUT).ignoreExceptions().until(() -> info() != null);
  }

  @Test
  @Order(1)
  void tokensPiledOnOneExpertMoveExpertsOnEveryShardBeforeThePlacementIsPublished() {
    await().atMost(TIMEOUT).until(() -> info().hasActivePlacement()); // the first round ran
    assertThat(info().getActivePlacement().getVersion()).as("no load, no move").isZero();
    int hot = onlyOnShard0(initial);
    send(hot, 8, 0);
    await().atMost(TIMEOUT).until(() -> info().getActivePlacement().getVersion() >= 1);

    ExpertServiceInfo info = info();
    PlacementTable active = info.getActivePlacement();
    assertThat(info.getPlacementVersion()).as("shard 0 prepared it").isGreaterThanOrEqualTo(active.getVersion());
    assertThat(FakePeerShard.prepared).as("shard 1 prepared it").contains(active);
    Placement p = PlacementTables.fromProto(active, ExpertWeights.numLayers(config));
    assertThat(p.replicas(layer, hot)).as("the hot expert got the redundant slots").isEqualTo(3);
    assertThat(metric("moemesh_expert_placement_version")).isEqualTo(active.getVersion());
    assertThat(metric("moemesh_expert_balancer_rounds_total{outcome=\"published\"}")).isGreaterThanOrEqualTo(1);
    assertThat(metric("moemesh_expert_prepared_version")).isGreaterThanOrEqualTo(active.getVersion());
    await().atMost(TIMEOUT).untilAsserted(() -> assertThat(metric("moemesh_expert_balancedness{placement=\"active\"}"))
        .as("the next rounds measure the window under the new placement").isGreaterThan(0.6));
    assertThat(metric("moemesh_expert_shard_tokens{shard=\"0\"}")).isEqualTo(8 * 64);
    assertThat(metric("moemesh_expert_shard_tokens{shard=\"1\"}")).isZero();
  }

  @Test
  @Order(2)
  void aShardThatCannotPrepareLeavesTheActivePlacementUntilItCan() {
    long before = info().getActivePlacement().getVersion();
    Placement active = PlacementTables.fromProto(info().getActivePlacement(), ExpertWeights.numLayers(config));
    double failures = metric("moemesh_expert_balancer_rounds_total{outcome=\"failed\"}");
    FakePeerShard.failPrepare = true;
    try {
      send(onlyOnShard0(active), 40, active.version()); // a new hot expert: the balancer wants to move experts again
      await().atMost(TIMEOUT).until(() -> metric("moemesh_expert_balancer_rounds_total{outcome=\"failed\"}") > failures);
      assertThat(info().getActivePlacement().getVersion()).as("still the placement every shard holds").isEqualTo(before);
    } finally {
      FakePeerShard.failPrepare = false;
    }
    await().atMost(TIMEOUT).until(() -> info().getActivePlacement().getVersion() > before);
    long now = info().getActivePlacement().getVersion();
    assertThat(FakePeerShard.prepared).extracting(PlacementTable::getVersion).contains(now);
    assertThat(metric("moemesh_expert_balancer_rounds_total{outcome=\"repaired\"}")).isGreaterThanOrEqualTo(1);
  }

  private ExpertServiceInfo info() {
    return experts.info(InfoRequest.getDefaultInstance()).await().atMost(TIMEOUT);
  }

  /** An expert of {@link #layer} that {@code p} places on shard 0 only. */
  private static int onlyOnShard0(Placement p) {
    return IntStream.of(p.expertsOnShard(layer, 0)).filter(e -> p.replicas(layer, e) == 1 && p.shardOf(p.slot(layer, e, 0)) == 0)
        .findFirst().orElseThrow();
  }

  /** {@code frames} dispatch frames of 64 tokens each, all routed to {@code expert}; every answer must be good. */
  private void send(int expert, int frames, long version) {
    List<DispatchFrame> batch = new ArrayList<>();
    try (TensorArena arena = TensorArena.confined()) {
      Tensor hidden = arena.allocate(DType.I8, 64, config.hiddenSize()), scales = arena.allocate(DType.F32, 64);
      for (long i = 0; i < hidden.numElements(); i++) hidden.setByte(i, (byte) (i % 251 - 125));
      for (int t = 0; t < 64; t++) scales.setFloat(t, 0.01f);
      int[] offsets = new int[config.nRoutedExperts() + 1];
      for (int e = 0; e < config.nRoutedExperts(); e++) offsets[e + 1] = e >= expert ? 64 : 0;
      var groups = ExpertDispatch.Groups.of(offsets);
      for (int f = 0; f < frames; f++)
        batch.add(DispatchFrame.newBuilder().setSeq(f).setLayerId(layer).setPlacementVersion(version).setHidden(KernelTensors.write(hidden))
            .setScales(KernelTensors.write(scales)).setExperts(ints(groups.experts()))
            .setExpertEnds(ints(groups.ends())).setTokenIndex(ints(IntStream.range(0, 64).toArray()))
            .build());
    }
    List<CombineFrame> answers = experts.dispatch(Multi.createFrom().iterable(batch)).collect().asList().await().atMost(TIMEOUT);
    assertThat(answers).hasSize(frames).allSatisfy(a -> assertThat(a.getError()).isEmpty());
  }

  private static io.moemesh.proto.common.v1.Tensor ints(int[] values) {
    return WireTensors.ints(values);
  }

  /** The sum of the /q/metrics samples {@code series} names; NaN when there is none. */
  static double metric(String series) {
    Scrape scrape = Scrape.parse(get("/q/metrics").asString());
    return scrape.samples(series).isEmpty() ? Double.NaN : scrape.sum(series);
  }
}
