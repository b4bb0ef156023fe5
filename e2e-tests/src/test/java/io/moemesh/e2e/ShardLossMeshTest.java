package io.moemesh.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.ManagedChannelBuilder;
import io.moemesh.model.demo.DemoCheckpoint;
import io.moemesh.proto.expert.v1.ExpertServiceInfo;
import io.moemesh.proto.expert.v1.ExpertsGrpc;
import io.moemesh.proto.expert.v1.InfoRequest;
import io.moemesh.tokenizer.TokenizerFiles;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * Losing a routed-expert shard (issue #29), as real processes on the tiny model: kv-store, a prefill, a decode whose
 * routed and shared experts run on 2 routed shards and a shared-expert service, and the gateway. Streams run; routed
 * shard 1 is killed (-9) mid-run; shard 0's heartbeats find it lost and host its slots itself; the streams and new
 * requests complete with the texts of a run without the kill; a restarted shard 1 gets its slots back. Then shard 0,
 * which coordinates, is killed: shard 1 takes over and hosts its slots; a restarted shard 0 takes back and brings every
 * slot home. Then shard 1 is stopped (SIGSTOP, a hung process): it is lost within the silence bound (seconds), not after
 * the 30 s layer timeout, and rejoins on SIGCONT.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ShardLossMeshTest {
  @TempDir static Path workDir;
  static final Duration READY = Duration.ofMinutes(3);
  static final int STREAMS = 6, MAX_TOKENS = 160;
  static ServiceProcess shard0, shard1, shared, kvStore, prefill, decode, gateway;
  static List<String> shard0Props, shard1Props;
  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeAll
  static void startMesh() throws Exception {
    Path model = workDir.resolve("tiny"), config = workDir.resolve("tiny.json");
    try (var in = DemoCheckpoint.class.getResourceAsStream("/io/moemesh/model/configs/tiny.json")) {
      Files.copy(in, config);
    }
    DemoCheckpoint.write(config, model, 29, DemoCheckpoint.Format.BF16, 0f, TokenizerFiles::write, (done, total) -> {});
    for (String name : List.of("loss-routed-0", "loss-routed-1")) // started on given ports, which appends to their logs
      Files.deleteIfExists(ServiceProcess.ROOT.resolve("e2e-tests/target/e2e-logs").resolve(name + ".log"));
    int[] shardGrpc = {ServiceProcess.freePort(), ServiceProcess.freePort()};
    List<String> expert = List.of("moemesh.expert.model-dir=" + model, "moemesh.expert.threads=1", "moemesh.expert.num-shards=2",
        "moemesh.expert.redundant-slots=2", "moemesh.expert.peers=localhost:" + shardGrpc[0] + ",localhost:" + shardGrpc[1]);
    shard0Props = with(expert, "moemesh.expert.shard=0");
    shard0 = ServiceProcess.start("expert-svc", "loss-routed-0", shard0Props, ServiceProcess.freePort(), shardGrpc[0]);
    shard1Props = with(expert, "moemesh.expert.shard=1");
    shard1 = ServiceProcess.start("expert-svc", "loss-routed-1", shard1Props, ServiceProcess.freePort(), shardGrpc[1]);
    shared = ServiceProcess.start("expert-svc", "loss-shared", with(expert, "moemesh.expert.role=shared"));
    kvStore = ServiceProcess.start("kv-store", "loss-kv-store", List.of("moemesh.kv-store.max-bytes=64M"));
    List<String> engine = List.of("moemesh.engine.model-dir=" + model, "moemesh.engine.kv-cache-memory=32M", "moemesh.engine.threads=1");
    prefill = ServiceProcess.start("prefill-svc", "loss-prefill", with(engine, "moemesh.prefill.kv-store=" + kvStore.grpcAddress()));
    decode = ServiceProcess.start("decode-svc", "loss-decode", with(engine, "moemesh.experts.routed=remote",
        "moemesh.experts.shards=" + shard0.grpcAddress() + "," + shard1.grpcAddress(), "moemesh.experts.redundant-slots=2",
        "moemesh.experts.shared=remote", "moemesh.experts.shared-address=" + shared.grpcAddress(), "moemesh.experts.placement-poll=500ms",
        "moemesh.experts.step-deadline=10s"));
    gateway = ServiceProcess.start("gateway", "loss-gateway", List.of("moemesh.gateway.model-dir=" + model,
        "moemesh.gateway.prefill.replicas=" + prefill.grpcAddress(), "moemesh.gateway.decode.replicas=" + decode.grpcAddress()));
    for (ServiceProcess p : List.of(shard0, shard1, shared, kvStore, prefill, decode, gateway)) p.awaitReady(READY);
  }

  @AfterAll
  static void stopMesh() throws Exception {
    for (ServiceProcess p : new ServiceProcess[] {gateway, decode, prefill, kvStore, shared, shard1, shard0}) if (p != null) p.close();
  }

  @Test
  @Order(1)
  void streamsAndNewRequestsCompleteWithTheSameTextsWhenARoutedShardIsKilledAndItRejoinsWhenRestarted() throws Exception {
    List<int[]> prompts = IntStream.range(0, STREAMS).mapToObj(i -> prompt(900 + i, 6 + 5 * i)).toList();
    int[] late = prompt(990, 11);
    List<String> reference = new ArrayList<>();
    for (var s : startStreams(prompts)) reference.add(s.join().text());
    String lateReference = complete(late).text;

    List<Stream> streams = startStreams(prompts);
    await().atMost(Duration.ofMinutes(1)).until(() -> streams.stream().allMatch(s -> s.events.size() >= 10));
    assertThat(streams).as("all still running at the kill").noneMatch(s -> s.done.isDone());
    double lossesBefore = ExpertParallelMeshTest.counter(shard0, "moemesh_expert_shard_losses_total{shard=\"1\"}");
    LocalDateTime killedAt = LocalDateTime.now();
    long kill = System.nanoTime();
    shard1.kill();
    Completion first = complete(late); // a new request, sent at once
    double firstSeconds = (System.nanoTime() - kill) / 1e9;

    List<String> problems = new ArrayList<>();
    double worstGap = 0;
    for (int i = 0; i < STREAMS; i++) {
      Stream s = streams.get(i).join();
      if (s.error != null) problems.add("stream " + i + ": " + s.error);
      else if (!reference.get(i).equals(s.text())) problems.add("stream " + i + " differs: " + s.text() + " ≠ " + reference.get(i));
      worstGap = Math.max(worstGap, s.longestGapAfter(kill));
    }
    assertThat(problems).as("every stream completes with the text of the run without the kill").isEmpty();
    assertThat(first.status).as(first.body).isEqualTo(200);
    assertThat(first.text).isEqualTo(lateReference);
    assertThat(firstSeconds).as("a new request right after the kill").isLessThan(30);

    double detected = secondsAfter(killedAt, shard0, "WARN .*failover: routed shard 1 at localhost:" + shard1.grpcPort + " is lost");
    double replaced = secondsAfter(killedAt, shard0, "WARN .*failover: version \\d+: slots hosted");
    assertThat(detected).as("shard 0 warns naming the lost shard, within seconds").isBetween(0.0, 10.0);
    assertThat(ExpertParallelMeshTest.counter(shard0, "moemesh_expert_shard_losses_total{shard=\"1\"}") - lossesBefore).isEqualTo(1);
    assertThat(ExpertParallelMeshTest.counter(shard0, "moemesh_expert_live_shards")).isEqualTo(1);
    assertThat(ExpertParallelMeshTest.counter(decode, "moemesh_expert_redispatched_assignments_total")).as("in-flight steps retried").isPositive();
    assertThat(ExpertParallelMeshTest.counter(decode, "moemesh_expert_step_failures_total")).isZero();
    ExpertServiceInfo failedOver = info(shard0);
    assertThat(failedOver.getActivePlacement().getSlotToShardList()).as("every slot on shard 0").containsOnly(0);
    System.out.printf("ShardLossMeshTest: after the kill: lost at %.2f s, new placement published at %.2f s; a new request answered in"
        + " %.2f s; longest silence of a stream %.2f s%n", detected, replaced, firstSeconds, worstGap);

    // shard 1 restarts on its ports: it rejoins, gets its slots back, and computes again; nothing else restarts
    double framesBefore = ExpertParallelMeshTest.counter(shard0, "moemesh_expert_frames_total{kind=\"routed\"}");
    shard1 = ServiceProcess.start("expert-svc", "loss-routed-1", shard1Props, shard1.httpPort, shard1.grpcPort);
    shard1.awaitReady(READY);
    await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(250)).ignoreExceptions().until(() -> {
      var active = info(shard0).getActivePlacement();
      return active.getSlotToShardCount() == 0 && active.getVersion() > failedOver.getActivePlacement().getVersion()
          && ExpertParallelMeshTest.placementVersion(decode) == active.getVersion();
    });
    assertThat(ExpertParallelMeshTest.counter(shard0, "moemesh_expert_live_shards")).isEqualTo(2);
    Completion again = complete(late);
    assertThat(again.text).as(again.body).isEqualTo(lateReference);
    assertThat(ExpertParallelMeshTest.counter(shard1, "moemesh_expert_frames_total{kind=\"routed\"}")).as("the restarted shard computes").isPositive();
    assertThat(framesBefore).isPositive();
  }

  @Test
  @Order(2)
  void whenShard0WhichCoordinatesIsKilledShard1TakesOverAndARestartedShard0TakesBack() throws Exception {
    List<int[]> prompts = IntStream.range(0, STREAMS).mapToObj(i -> prompt(920 + i, 6 + 5 * i)).toList();
    int[] late = prompt(991, 9);
    List<String> reference = new ArrayList<>();
    for (var s : startStreams(prompts)) reference.add(s.join().text());
    String lateReference = complete(late).text;
    long versionBefore = info(shard1).getActivePlacement().getVersion();

    List<Stream> streams = startStreams(prompts);
    await().atMost(Duration.ofMinutes(1)).until(() -> streams.stream().allMatch(s -> s.events.size() >= 10));
    int http = shard0.httpPort, grpc = shard0.grpcPort;
    LocalDateTime killedAt = LocalDateTime.now();
    long kill = System.nanoTime();
    shard0.kill(); // it coordinated: shard 1 must notice, take over and host shard 0's slots
    Completion first = complete(late);
    double firstSeconds = (System.nanoTime() - kill) / 1e9;
    Outcomes outcomes = outcomes(streams, reference, kill);
    assertThat(outcomes.problems).as("every stream completes with its text or ends with the shard-loss error").isEmpty();
    assertThat(first.status).as(first.body).isEqualTo(200);
    assertThat(first.text).isEqualTo(lateReference);
    assertThat(firstSeconds).as("a new request right after the kill").isLessThan(30);

    double detected = secondsAfter(killedAt, shard1, "WARN .*failover: routed shard 0 at localhost:" + grpc + " is lost");
    double takeover = secondsAfter(killedAt, shard1, "WARN .*failover: shard 1 coordinates now");
    double replaced = secondsAfter(killedAt, shard1, "WARN .*failover: version \\d+: slots hosted");
    assertThat(detected).as("shard 1 warns naming the lost shard 0, within seconds").isBetween(0.0, 10.0);
    assertThat(takeover).as("and takes over coordination").isBetween(0.0, 10.0);
    assertThat(replaced).as("and publishes a placement without shard 0").isBetween(0.0, 15.0);
    ExpertServiceInfo failedOver = info(shard1);
    assertThat(failedOver.getActivePlacement().getSlotToShardList()).as("every slot on shard 1").containsOnly(1);
    assertThat(failedOver.getActivePlacement().getVersion()).as("versions only rise").isGreaterThan(versionBefore);
    assertThat(ExpertParallelMeshTest.counter(shard1, "moemesh_expert_coordinating")).isEqualTo(1);
    assertThat(ExpertParallelMeshTest.placementVersion(decode)).isEqualTo(failedOver.getActivePlacement().getVersion());
    System.out.printf("ShardLossMeshTest: shard 0 killed: lost at %.2f s, shard 1 coordinates at %.2f s, placement published at %.2f s;"
        + " a new request answered in %.2f s; %d of %d streams completed, %d ended with the shard-loss error; longest silence %.2f s%n",
        detected, takeover, replaced, firstSeconds, outcomes.completed, STREAMS, outcomes.failed, outcomes.worstGap);

    // shard 0 restarts: it resumes the placement its peer published, takes coordination back and brings every slot home
    shard0 = ServiceProcess.start("expert-svc", "loss-routed-0", shard0Props, http, grpc);
    shard0.awaitReady(READY);
    await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(250)).ignoreExceptions().until(() -> {
      var active = info(shard0).getActivePlacement();
      return active.getSlotToShardCount() == 0 && active.getVersion() > failedOver.getActivePlacement().getVersion()
          && ExpertParallelMeshTest.placementVersion(decode) == active.getVersion();
    });
    await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
        .until(() -> ExpertParallelMeshTest.counter(shard1, "moemesh_expert_coordinating") == 0);
    assertThat(ExpertParallelMeshTest.counter(shard0, "moemesh_expert_coordinating")).isEqualTo(1);
    assertThat(shard1.logText()).contains("failover: shard 1 stops coordinating: shard 0 is live again");
    Completion again = complete(late);
    assertThat(again.text).as(again.body).isEqualTo(lateReference);
  }

  /**
   * SIGSTOP of routed shard 1 under streams: its connections stay open and nothing answers. Shard 0 finds it lost once it
   * has answered no heartbeat for the silence bound (2 s deadline + 3 × 500 ms), not after three deadlines; the streams
   * complete with their texts and a new request sent at the stop is answered without the shard; SIGCONT brings it back.
   */
  @Test
  @Order(3)
  void aHungShardIsLostWithinTheSilenceBoundAndNewRequestsAreServedWithoutIt() throws Exception {
    List<int[]> prompts = IntStream.range(0, STREAMS).mapToObj(i -> prompt(940 + i, 6 + 5 * i)).toList();
    int[] late = prompt(991, 13);
    String losses = "moemesh_expert_shard_losses_total{shard=\"1\"}";
    double lossesBefore = ExpertParallelMeshTest.counter(shard0, losses);
    List<String> reference = new ArrayList<>();
    for (var s : startStreams(prompts)) reference.add(s.join().text());
    String lateReference = complete(late).text;
    List<Stream> streams = startStreams(prompts);
    await().atMost(Duration.ofMinutes(1)).until(() -> streams.stream().allMatch(s -> s.events.size() >= 10));
    assertThat(streams).as("all still running at the stop").noneMatch(s -> s.done.isDone());
    assertThat(ExpertParallelMeshTest.counter(shard0, losses)).as("no loss while the streams load the shards").isEqualTo(lossesBefore);
    LocalDateTime stoppedAt = LocalDateTime.now();
    long stop = System.nanoTime();
    shard1.pause(); // SIGSTOP: its connections stay open and nothing answers (the layer timeout is 30 s)
    Outcomes outcomes;
    Completion first;
    double firstSeconds;
    try {
      first = complete(late); // a new request, sent at once
      firstSeconds = (System.nanoTime() - stop) / 1e9;
      outcomes = outcomes(streams, reference, stop);
    } finally {
      shard1.resume();
    }
    double detected = secondsAfter(stoppedAt, shard0, "WARN .*failover: routed shard 1 at localhost:" + shard1.grpcPort + " is lost");
    double replaced = secondsAfter(stoppedAt, shard0, "WARN .*failover: version \\d+: slots hosted");
    System.out.printf("ShardLossMeshTest: shard 1 stopped (SIGSTOP): lost at %.2f s, placement published at %.2f s; a new request answered"
        + " in %.2f s; %d of %d streams completed, %d ended with the shard-loss error; longest silence %.2f s%n", detected, replaced,
        firstSeconds, outcomes.completed, STREAMS, outcomes.failed, outcomes.worstGap);
    assertThat(outcomes.problems).as("every stream completes with its text or ends with the shard-loss error").isEmpty();
    assertThat(outcomes.completed).as("the lost shard's experts are hosted before the step deadline (10 s)").isEqualTo(STREAMS);
    assertThat(detected).as("a hung shard is lost within the silence bound (3.5 s) and a heartbeat's wait, not 3 × (2 s + 0.5 s)")
        .isBetween(0.0, 6.0);
    assertThat(outcomes.worstGap).as("no stream waits for the 30 s layer timeout, nor the old 7.5 s bound").isLessThan(7.5);
    assertThat(first.status).as(first.body).isEqualTo(200);
    assertThat(first.text).as("a new request, without the stopped shard").isEqualTo(lateReference);
    // resumed, it answers heartbeats again and gets its slots back; nothing restarted
    await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(250)).ignoreExceptions()
        .until(() -> info(shard0).getActivePlacement().getSlotToShardCount() == 0 && ExpertParallelMeshTest.counter(shard0, "moemesh_expert_live_shards") == 2);
    assertThat(shard0.logText()).contains("failover: routed shard 1 at localhost:" + shard1.grpcPort + " answers again");
    assertThat(ExpertParallelMeshTest.counter(shard0, losses)).as("lost once").isEqualTo(lossesBefore + 1);
    Completion again = complete(late);
    assertThat(again.text).as(again.body).isEqualTo(lateReference);
  }

  /** How streams started before a fault ended: each with its reference text, or with the shard-loss error; anything else is a problem. */
  record Outcomes(int completed, int failed, double worstGap, List<String> problems) {}

  static Outcomes outcomes(List<Stream> streams, List<String> reference, long since) throws Exception {
    int completed = 0, failed = 0;
    double worstGap = 0;
    List<String> problems = new ArrayList<>();
    for (int i = 0; i < streams.size(); i++) {
      Stream s = streams.get(i).join();
      worstGap = Math.max(worstGap, s.longestGapAfter(since));
      if (s.error != null && s.error.contains("expert-shard loss")) failed++;
      else if (s.error != null) problems.add("stream " + i + ": " + s.error);
      else if (!reference.get(i).equals(s.text())) problems.add("stream " + i + " differs: " + s.text() + " ≠ " + reference.get(i));
      else completed++;
    }
    return new Outcomes(completed, failed, worstGap, problems);
  }

  /** Seconds from {@code since} to the first line of {@code p}'s log at or after it that matches {@code pattern}; -1 if none. */
  static double secondsAfter(LocalDateTime since, ServiceProcess p, String pattern) throws Exception {
    var regex = Pattern.compile(pattern);
    for (String line : p.logText().lines().toList()) {
      if (line.length() < 23 || !regex.matcher(line).find()) continue;
      LocalDateTime at = LocalDateTime.parse(line.substring(0, 23), LOG_TIME);
      if (!at.isBefore(since.minusNanos(5_000_000))) return Duration.between(since, at).toMillis() / 1e3;
    }
    return -1;
  }

  static final DateTimeFormatter LOG_TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss,SSS");

  // ---- clients ----------------------------------------------------------------------------------------------------

  static int[] prompt(long seed, int length) {
    return new java.util.SplittableRandom(seed).ints(length, 2, 1000).toArray();
  }

  static String body(int[] prompt, int maxTokens, boolean stream) {
    return "{\"model\": \"tiny\", \"prompt\": " + Arrays.toString(prompt) + ", \"max_tokens\": " + maxTokens
        + ", \"temperature\": 0, \"ignore_eos\": true, \"stream\": " + stream + "}";
  }

  static HttpRequest request(int[] prompt, int maxTokens, boolean stream) {
    return HttpRequest.newBuilder(URI.create("http://localhost:" + gateway.httpPort + "/v1/completions")).header("Content-Type", "application/json")
        .timeout(Duration.ofMinutes(3)).POST(HttpRequest.BodyPublishers.ofString(body(prompt, maxTokens, stream))).build();
  }

  record Completion(int status, String body, String text) {}

  static Completion complete(int[] prompt) throws Exception {
    var response = HTTP.send(request(prompt, 16, false), HttpResponse.BodyHandlers.ofString());
    String text = response.statusCode() == 200 ? JSON.readTree(response.body()).at("/choices/0/text").asText() : null;
    return new Completion(response.statusCode(), response.body(), text);
  }

  static List<Stream> startStreams(List<int[]> prompts) {
    List<Stream> streams = new ArrayList<>();
    for (int[] p : prompts) streams.add(new Stream(p));
    return streams;
  }

  /** One streamed completion, read on its own virtual thread: its events' texts and arrival times, or its error. */
  static final class Stream {
    final List<String> events = new CopyOnWriteArrayList<>();
    final List<Long> arrivals = new CopyOnWriteArrayList<>();
    final CompletableFuture<Void> done = new CompletableFuture<>();
    volatile String error;

    Stream(int[] prompt) {
      Thread.ofVirtual().start(() -> {
        try {
          var response = HTTP.send(request(prompt, MAX_TOKENS, true), HttpResponse.BodyHandlers.ofLines());
          if (response.statusCode() != 200) error = "status " + response.statusCode();
          response.body().forEach(line -> {
            if (!line.startsWith("data: ") || line.equals("data: [DONE]")) return;
            arrivals.add(System.nanoTime());
            try {
              JsonNode event = JSON.readTree(line.substring(6));
              if (event.has("error")) error = event.get("error").toString();
              else events.add(event.at("/choices/0/text").asText());
            } catch (Exception e) {
              error = "unreadable event " + line;
            }
          });
        } catch (Exception e) {
          error = e.toString();
        } finally {
          done.complete(null);
        }
      });
    }

    Stream join() throws Exception {
      done.get(3, TimeUnit.MINUTES);
      return this;
    }

    String text() {
      return String.join("", events);
    }

    /** The longest time between two events (or from {@code since} to the next) after {@code since}, in seconds. */
    double longestGapAfter(long since) {
      long previous = since, longest = 0;
      for (long t : arrivals) {
        if (t < since) continue;
        longest = Math.max(longest, t - previous);
        previous = t;
      }
      return longest / 1e9;
    }
  }

  static ExpertServiceInfo info(ServiceProcess shard) {
    var channel = ManagedChannelBuilder.forTarget(shard.grpcAddress()).usePlaintext().build();
    try {
      return ExpertsGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS).info(InfoRequest.getDefaultInstance());
    } finally {
      channel.shutdownNow();
    }
  }

  private static List<String> with(List<String> base, String... more) {
    var all = new ArrayList<>(base);
    all.addAll(List.of(more));
    return all;
  }
}
