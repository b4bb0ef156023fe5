package io.moemesh.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The planner with its local connector on a live mesh (docs/planner.md, "Connectors"), as {@code bin/moemesh up
 * --planner} runs it: kv-store and the gateway are started here; the planner process starts and stops the prefill and
 * decode replicas from launch files, on base + 10·i. Decode has 1 to 2 replicas of a profiled concurrency of 3. Eight
 * clients streaming at once make the planner start decode replica 1, which then serves streams; two clients are one
 * replica's worth, and after the (short) cool-down the planner stops replica 1 with SIGTERM — it drains — while those two
 * keep streaming. No request fails in either direction.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PlannerMeshTest {
  static final Path MODEL = ServiceProcess.ROOT.resolve("models/demo").toAbsolutePath();
  static final Path WORK = ServiceProcess.ROOT.resolve("e2e-tests/target/planner-mesh").toAbsolutePath();
  static final Duration SCALE_TIMEOUT = Duration.ofSeconds(150);
  static final int MAX_TOKENS = 64, PROMPT_TOKENS = 16, HIGH = 8, LOW = 2;
  static ServiceProcess kvStore, gateway, planner;
  static int prefillBase, decodeBase;

  @BeforeAll
  static void startMesh() throws Exception {
    Files.createDirectories(WORK);
    prefillBase = PlannerMesh.freeBase();
    decodeBase = PlannerMesh.freeBase();
    kvStore = ServiceProcess.start("kv-store", "planner-kv-store", List.of("moemesh.kv-store.max-bytes=256M"));
    List<String> engine = List.of("moemesh.engine.model-dir=" + MODEL, "moemesh.engine.kv-cache-memory=64M", "moemesh.engine.threads=1");
    Path prefillLaunch = PlannerMesh.launchFile(WORK, "prefill", "prefill-svc",
        DisaggregatedMeshTest.with(engine, "moemesh.prefill.kv-store=" + kvStore.grpcAddress()));
    Path decodeLaunch = PlannerMesh.launchFile(WORK, "decode", "decode-svc", DisaggregatedMeshTest.with(engine, "moemesh.decode.drain-timeout=5s"));
    // 3 requests per decode replica at an ITL target far under the real one: demand is the running streams (Little's
    // law with the target counts fewer), and the correction is off (max 1) so that the counts follow the load alone
    Path profile = WORK.resolve("profile.json");
    Files.writeString(profile, """
        {"prefill": {"tokensPerSecondPerReplica": 100000, "ttftTargetMs": 5000},
         "decode": {"concurrencyPerReplica": 3, "itlTargetMs": 5}, "measuredOn": "PlannerMeshTest"}
        """);
    planner = ServiceProcess.start("planner", "planner-mesh-planner", List.of("moemesh.planner.connector=local",
        "moemesh.planner.ttft-target=5s", "moemesh.planner.itl-target=5ms", "moemesh.planner.profile=" + profile,
        "moemesh.planner.interval=1s", "moemesh.planner.scale-up-cooldown=5s", "moemesh.planner.scale-down-cooldown=8s",
        "moemesh.planner.max-correction=1", "moemesh.planner.prefill.min-replicas=1", "moemesh.planner.prefill.max-replicas=1",
        "moemesh.planner.decode.min-replicas=1", "moemesh.planner.decode.max-replicas=2",
        "moemesh.planner.local.prefill-launch=" + prefillLaunch, "moemesh.planner.local.decode-launch=" + decodeLaunch,
        "moemesh.planner.local.prefill-http-base=" + prefillBase, "moemesh.planner.local.decode-http-base=" + decodeBase,
        "moemesh.planner.local.log-dir=" + ServiceProcess.ROOT.resolve("e2e-tests/target/e2e-logs/planner-mesh").toAbsolutePath(),
        "moemesh.planner.local.stop-grace=30s"));
    // as up does: the gateway knows every port a replica may come up on, and skips the ones that do not answer
    gateway = ServiceProcess.start("gateway", "planner-gateway", List.of("moemesh.gateway.model-dir=" + MODEL,
        "moemesh.gateway.prefill.replicas=localhost:" + (prefillBase + 1),
        "moemesh.gateway.decode.replicas=localhost:" + (decodeBase + 1) + ",localhost:" + (decodeBase + 11)));
    for (ServiceProcess p : List.of(kvStore, planner, gateway)) p.awaitReady(DisaggregatedMeshTest.READY);
    await().atMost(DisaggregatedMeshTest.READY).pollInterval(Duration.ofMillis(200)).until(() -> PlannerMesh.ready(prefillBase) && PlannerMesh.ready(decodeBase));
  }

  @AfterAll
  static void stopMesh() throws Exception {
    for (ServiceProcess p : new ServiceProcess[] {gateway, planner, kvStore}) if (p != null) p.close();
  }

  @Test
  @Order(1)
  void scalesDecodeUpUnderLoadAndDownAfterItWithNoFailedRequest() throws Exception {
    assertThat(PlannerMesh.answers(decodeBase + 10)).as("decode replica 1 before the load").isFalse();
    var load = new CompletionLoad(gateway.httpPort, PROMPT_TOKENS, MAX_TOKENS);
    try {
      long start = System.nanoTime();
      load.clients(HIGH);
      // when the planner asked for 2, when replica 1 was ready, when it had served a stream (ms after the load began)
      long[] at = {-1, -1, -1};
      await().atMost(SCALE_TIMEOUT).pollInterval(Duration.ofMillis(200)).until(() -> {
        long now = (System.nanoTime() - start) / 1_000_000;
        if (at[0] < 0 && PlannerMesh.plannerSeries(planner, "moemesh_planner_replicas{kind=\"desired\",stage=\"decode\"}") == 2) at[0] = now;
        if (at[1] < 0 && PlannerMesh.ready(decodeBase + 10)) at[1] = now;
        if (at[2] < 0 && PlannerMesh.sum(decodeBase + 10, "vllm:request_success_total") > 0) at[2] = now;
        return at[2] >= 0;
      });
      assertThat(at[0]).as("the planner asked for a second decode replica").isNotNegative();
      double servedByReplica1 = PlannerMesh.sum(decodeBase + 10, "vllm:request_success_total");

      load.clients(LOW); // one replica's worth, still streaming while replica 1 drains and goes
      long lowAt = System.nanoTime();
      int doneBeforeDown = load.done.get();
      await().atMost(SCALE_TIMEOUT).pollInterval(Duration.ofMillis(200)).until(() -> !PlannerMesh.answers(decodeBase + 10));
      long downMs = (System.nanoTime() - lowAt) / 1_000_000;
      int duringDown = load.done.get() - doneBeforeDown;
      Thread.sleep(2000); // streams that were moved off replica 1 end on replica 0
      load.stop();
      System.out.printf("planner, local connector: after %d clients began, the planner asked for 2 decode replicas at %d ms,"
          + " replica 1 was ready at %d ms and had served a stream at %d ms (%.0f by the low phase); 2 -> 1 %d ms after the load"
          + " fell to %d clients, %d requests completed meanwhile; %d requests, %d failed%n",
          HIGH, at[0], at[1], at[2], servedByReplica1, downMs, LOW, duringDown, load.done.get(), load.failures.size());
      assertThat(load.failures).as("failed requests").isEmpty();
      assertThat(duringDown).as("requests completed while the planner scaled down").isPositive();
      // streams moved off the draining replica can lift ITL for a moment and the planner ask for 2 again; with no load left
      // it settles at one
      await().atMost(SCALE_TIMEOUT).pollInterval(Duration.ofMillis(200))
          .until(() -> PlannerMesh.plannerSeries(planner, "moemesh_planner_replicas{kind=\"desired\",stage=\"decode\"}") == 1);
      assertThat(PlannerMesh.ready(decodeBase)).as("decode replica 0 stays").isTrue();
      assertThat(Files.readString(ServiceProcess.ROOT.resolve("e2e-tests/target/e2e-logs/planner-mesh/decode-1.log")))
          .as("replica 1 drained").contains("draining: readiness down");
    } finally {
      load.stop();
    }
  }

  @Test
  @Order(2)
  void stoppingThePlannerStopsTheReplicasItStarted() throws Exception {
    planner.terminate();
    assertThat(planner.awaitExit(Duration.ofSeconds(60))).as("the planner exits").isTrue();
    assertThat(PlannerMesh.answers(decodeBase)).as("decode replica 0").isFalse();
    assertThat(PlannerMesh.answers(prefillBase)).as("prefill replica 0").isFalse();
  }
}
