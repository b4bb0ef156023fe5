package io.moemesh.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The planner sizing the prefill stage on a live mesh (docs/planner.md, "On a live mesh"), with its local connector as
 * {@code bin/moemesh up --planner} runs it: kv-store and the gateway are started here, the planner starts 1 to 2 prefill
 * replicas and one decode replica from launch files. Long prompts with short answers make prefill the bottleneck: eight
 * clients sending 512-token prompts for 4 tokens hold TTFT above its 1 s target on one prefill replica, and the planner
 * starts prefill replica 1, which the gateway finds and routes prompts to. When the ramp ends (one client, a prompt every
 * two seconds) the planner stops replica 1 with SIGTERM: it drains (the gateway stops routing there; a prompt it had
 * still finishes, or comes back with the drain marker and is prefilled on replica 0), TTFT is back under target, and
 * no request fails in either direction. Then a prefill replica stopped while it holds a queue of prompts hands them
 * back: with a drain timeout of 0 each is cut off with the drain marker and the gateway prefills it on replica 0.
 *
 * <p>The profile's prefill capacity (600 prompt tokens/s per replica) is far under what one replica computes, so that
 * the decision does not hang on this machine's speed, and the correction is off: the counts follow the load alone.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PrefillScalingMeshTest {
  static final Path MODEL = ServiceProcess.ROOT.resolve("models/demo").toAbsolutePath();
  static final Path WORK = ServiceProcess.ROOT.resolve("e2e-tests/target/prefill-scaling").toAbsolutePath();
  static final Path LOGS = ServiceProcess.ROOT.resolve("e2e-tests/target/e2e-logs/prefill-scaling").toAbsolutePath();
  /** The time within which the planner must ask for the second prefill replica once the ramp began: a few 1 s rounds. */
  static final Duration DECISION_WITHIN = Duration.ofSeconds(30);
  /** Start-up of a replica's JVM and engine on two shared cores, then its first prompt; and the drain after the ramp. */
  static final Duration SCALE_TIMEOUT = Duration.ofSeconds(150);
  static final int PROMPT_TOKENS = 512, MAX_TOKENS = 4, HIGH = 8, BURST = 12;
  static final Duration TTFT_TARGET = Duration.ofSeconds(1), LOW_PAUSE = Duration.ofSeconds(2);
  static final String DESIRED_PREFILL = "moemesh_planner_replicas{kind=\"desired\",stage=\"prefill\"}";
  static final String OBSERVED_TTFT_P90 = "moemesh_planner_observed_ttft_seconds{quantile=\"0.9\"}";
  /** A prefill replica counts the prompts it computed as first tokens. */
  static final String PROMPTS_COMPUTED = "vllm:time_to_first_token_seconds_count";
  static final Pattern DRAINED = Pattern.compile("drained: (\\d+) calls finished, (\\d+) cut off");
  static ServiceProcess kvStore, gateway, planner;
  static int prefillBase, decodeBase, spareHttp, spareGrpc;
  static List<String> prefillProperties;

  @BeforeAll
  static void startMesh() throws Exception {
    prefillBase = PlannerMesh.freeBase();
    decodeBase = PlannerMesh.freeBase();
    spareHttp = ServiceProcess.freePort(); // a prefill replica the test starts and stops itself, not the planner
    spareGrpc = ServiceProcess.freePort();
    kvStore = ServiceProcess.start("kv-store", "prefill-scaling-kv-store", List.of("moemesh.kv-store.max-bytes=256M"));
    List<String> engine = List.of("moemesh.engine.model-dir=" + MODEL, "moemesh.engine.kv-cache-memory=64M", "moemesh.engine.threads=1");
    // one prompt a step: a replica's gauges are taken between steps, and a step of four 512-token prompts on two busy
    // cores lasts seconds, in which the replica looks idle to the planner and the gateway
    prefillProperties = DisaggregatedMeshTest.with(engine, "moemesh.prefill.kv-store=" + kvStore.grpcAddress(),
        "moemesh.engine.max-batched-tokens=" + PROMPT_TOKENS);
    Path prefillLaunch = PlannerMesh.launchFile(WORK, "prefill", "prefill-svc",
        DisaggregatedMeshTest.with(prefillProperties, "moemesh.prefill.drain-timeout=10s"));
    Path decodeLaunch = PlannerMesh.launchFile(WORK, "decode", "decode-svc",
        DisaggregatedMeshTest.with(engine, "moemesh.decode.kv-stores=" + kvStore.grpcAddress()));
    Path profile = WORK.resolve("profile.json");
    Files.writeString(profile, """
        {"prefill": {"tokensPerSecondPerReplica": 600, "ttftTargetMs": 1000},
         "decode": {"concurrencyPerReplica": 1000, "itlTargetMs": 1000}, "measuredOn": "PrefillScalingMeshTest"}
        """);
    planner = ServiceProcess.start("planner", "prefill-scaling-planner", List.of("moemesh.planner.connector=local",
        "moemesh.planner.ttft-target=" + TTFT_TARGET.toMillis() + "ms", "moemesh.planner.itl-target=1s",
        "moemesh.planner.profile=" + profile, "moemesh.planner.interval=1s", "moemesh.planner.scale-up-cooldown=5s",
        "moemesh.planner.scale-down-cooldown=15s", "moemesh.planner.backlog-drain=5s", "moemesh.planner.max-correction=1",
        "moemesh.planner.prefill.min-replicas=1", "moemesh.planner.prefill.max-replicas=2",
        "moemesh.planner.decode.min-replicas=1", "moemesh.planner.decode.max-replicas=1",
        "moemesh.planner.local.prefill-launch=" + prefillLaunch, "moemesh.planner.local.decode-launch=" + decodeLaunch,
        "moemesh.planner.local.prefill-http-base=" + prefillBase, "moemesh.planner.local.decode-http-base=" + decodeBase,
        "moemesh.planner.local.log-dir=" + LOGS, "moemesh.planner.local.stop-grace=30s"));
    // as up does: the gateway knows every port a prefill replica may come up on, and skips the ones that do not answer
    gateway = ServiceProcess.start("gateway", "prefill-scaling-gateway", List.of("moemesh.gateway.model-dir=" + MODEL,
        "moemesh.gateway.prefill.replicas=localhost:" + (prefillBase + 1) + ",localhost:" + (prefillBase + 11) + ",localhost:" + spareGrpc,
        "moemesh.gateway.decode.replicas=localhost:" + (decodeBase + 1)));
    for (ServiceProcess p : List.of(kvStore, planner, gateway)) p.awaitReady(DisaggregatedMeshTest.READY);
    await().atMost(DisaggregatedMeshTest.READY).pollInterval(Duration.ofMillis(200))
        .until(() -> PlannerMesh.ready(prefillBase) && PlannerMesh.ready(decodeBase));
  }

  @AfterAll
  static void stopMesh() throws Exception {
    for (ServiceProcess p : new ServiceProcess[] {gateway, planner, kvStore}) if (p != null) p.close();
  }

  @Test
  @Order(1)
  void longPromptsMakeThePlannerAddAPrefillReplicaThatDrainsAfterTheRampWithNoFailedRequest() throws Exception {
    assertThat(PlannerMesh.answers(prefillBase + 10)).as("prefill replica 1 before the load").isFalse();
    var ramp = new CompletionLoad(gateway.httpPort, PROMPT_TOKENS, MAX_TOKENS);
    var after = new CompletionLoad(gateway.httpPort, PROMPT_TOKENS, MAX_TOKENS);
    try {
      long start = System.nanoTime();
      ramp.clients(HIGH);
      // when the planner asked for 2, when replica 1 was ready, when the gateway routed to it, when it had computed a
      // prompt (ms after the ramp began)
      long[] at = {-1, -1, -1, -1};
      // the highest p90 TTFT the planner observed while one prefill replica served the ramp
      double[] ttftOnOne = {0};
      await().atMost(SCALE_TIMEOUT).pollInterval(Duration.ofMillis(200)).until(() -> {
        long now = (System.nanoTime() - start) / 1_000_000;
        if (at[0] < 0 && PlannerMesh.plannerSeries(planner, DESIRED_PREFILL) == 2) at[0] = now;
        if (at[2] < 0) {
          double ttft = PlannerMesh.plannerSeries(planner, OBSERVED_TTFT_P90);
          if (ttft > ttftOnOne[0]) ttftOnOne[0] = ttft; // NaN (an interval without a first token) is not higher
        }
        if (at[1] < 0 && PlannerMesh.ready(prefillBase + 10)) at[1] = now;
        if (at[2] < 0 && PlannerMesh.gatewayRoutesTo(gateway.httpPort, "prefill@localhost:" + (prefillBase + 11))) at[2] = now;
        if (at[3] < 0 && PlannerMesh.sum(prefillBase + 10, PROMPTS_COMPUTED) > 0) at[3] = now;
        return at[3] >= 0;
      });
      assertThat(at[0]).as("ms from the ramp to the planner asking for a second prefill replica")
          .isNotNegative().isLessThanOrEqualTo(DECISION_WITHIN.toMillis());
      assertThat(ttftOnOne[0]).as("highest p90 TTFT (s) the planner observed on one replica").isGreaterThan(TTFT_TARGET.toMillis() / 1000.0);
      assertThat(PlannerMesh.answers(decodeBase + 10)).as("no second decode replica: decode is not the bottleneck").isFalse();
      Thread.sleep(5000); // both replicas serve the ramp for a while
      double computedByReplica1 = PlannerMesh.sum(prefillBase + 10, PROMPTS_COMPUTED);

      ramp.clients(0); // the ramp's end (its requests in flight finish): a prompt every two seconds, arriving while replica 1 drains
      after.clients(1, LOW_PAUSE);
      long lowAt = System.nanoTime();
      await().atMost(SCALE_TIMEOUT).pollInterval(Duration.ofMillis(200)).until(() -> !PlannerMesh.answers(prefillBase + 10));
      long downMs = (System.nanoTime() - lowAt) / 1_000_000;
      int duringDown = after.done.get();
      long downAt = System.nanoTime();
      Thread.sleep(8000); // the low load on replica 0 alone
      ramp.stop();
      after.stop();
      List<Double> highTtfts = ramp.ttftsSentSince(start), afterTtfts = after.ttftsSentSince(downAt);
      int failed = ramp.failures.size() + after.failures.size();
      System.out.printf("planner, prefill: %d clients of %d-token prompts (%d tokens out); the planner asked for 2 prefill"
          + " replicas at %d ms (p90 TTFT observed on one replica up to %.2f s, target %.1f s), replica 1 was ready at %d ms, in the gateway's"
          + " routing at %d ms and computed a prompt at %d ms (%.0f by the ramp's end); client TTFT p50/p90 %.0f/%.0f ms over the ramp (%d requests); 2 -> 1 %d ms"
          + " after the ramp ended, %d requests completed meanwhile; client TTFT p90 on one replica after it %.0f ms"
          + " (%d requests); %d requests, %d failed%n",
          HIGH, PROMPT_TOKENS, MAX_TOKENS, at[0], ttftOnOne[0], TTFT_TARGET.toMillis() / 1000.0, at[1], at[2], at[3],
          computedByReplica1, CompletionLoad.quantile(highTtfts, 0.5), CompletionLoad.quantile(highTtfts, 0.9), highTtfts.size(),
          downMs, duringDown, CompletionLoad.quantile(afterTtfts, 0.9), afterTtfts.size(), ramp.done.get() + after.done.get(), failed);
      assertThat(ramp.failures).as("failed requests of the ramp").isEmpty();
      assertThat(after.failures).as("failed requests after the ramp").isEmpty();
      assertThat(duringDown).as("requests after the ramp completed while the planner scaled prefill down").isPositive();
      assertThat(afterTtfts).as("requests after the scale-down").isNotEmpty();
      assertThat(CompletionLoad.quantile(afterTtfts, 0.9)).as("p90 TTFT (ms) after the ramp, on one prefill replica")
          .isLessThan((double) TTFT_TARGET.toMillis());
      assertThat(PlannerMesh.plannerSeries(planner, DESIRED_PREFILL)).as("desired prefill replicas").isEqualTo(1);
      assertThat(PlannerMesh.ready(prefillBase)).as("prefill replica 0 stays").isTrue();
      assertThat(Files.readString(LOGS.resolve("prefill-1.log"))).as("replica 1 drained").contains("draining: readiness down");
    } finally {
      ramp.stop();
      after.stop();
    }
  }

  @Test
  @Order(2)
  void aPrefillReplicaStoppedWithPromptsQueuedHandsThemBackAndNoneFails() throws Exception {
    // a start on given ports appends to the service's log (a restart's does); this replica's drain is the only one there
    Files.deleteIfExists(ServiceProcess.ROOT.resolve("e2e-tests/target/e2e-logs/prefill-scaling-spare.log"));
    var spare = ServiceProcess.start("prefill-svc", "prefill-scaling-spare", DisaggregatedMeshTest.with(prefillProperties,
        "moemesh.prefill.drain-timeout=0s"), spareHttp, spareGrpc);
    var burst = new CompletionLoad(gateway.httpPort, PROMPT_TOKENS, MAX_TOKENS);
    try {
      spare.awaitReady(DisaggregatedMeshTest.READY);
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
          .until(() -> PlannerMesh.gatewayRoutesTo(gateway.httpPort, "prefill@localhost:" + spareGrpc));
      burst.burst(BURST);
      // prompts wait there (least queued prompt tokens spreads them over both replicas): stop it with them queued
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50))
          .until(() -> PlannerMesh.sum(spareHttp, "moemesh_engine_queued_prompt_tokens") >= 2 * PROMPT_TOKENS);
      spare.terminate();
      assertThat(spare.awaitExit(Duration.ofSeconds(60))).as("the stopped replica exits").isTrue();
      burst.stop();
      Matcher drained = DRAINED.matcher(spare.logText());
      assertThat(drained.find()).as("the replica logged its drain").isTrue();
      System.out.printf("prefill drain, timeout 0: %s calls finished there, %s cut off and prefilled on replica 0; %d of %d"
          + " requests completed, %d failed%n", drained.group(1), drained.group(2), burst.done.get(), BURST, burst.failures.size());
      assertThat(Integer.parseInt(drained.group(2))).as("prompts handed back").isPositive();
      assertThat(burst.failures).as("failed requests").isEmpty();
      assertThat(burst.done.get()).as("completed requests").isEqualTo(BURST);
    } finally {
      burst.stop();
      spare.close();
    }
  }
}
