package io.moemesh.e2e;

import static io.moemesh.e2e.DisaggregatedMeshTest.prompt;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moemesh.engine.GenerationRequest;
import io.moemesh.engine.KvConnector;
import io.moemesh.engine.LoadedEngine;
import io.moemesh.enginehost.ConfigMappings;
import io.moemesh.model.sampling.SamplingParams;
import io.moemesh.telemetry.testing.Scrape;
import io.moemesh.tokenizer.Tokenizer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Mid-stream migration and graceful drain (docs/reliability.md, "Drain and migration") with real processes: kv-store,
 * a prefill replica, two decode replicas and the gateway on the shipped demo model (its 1024-token context lets a stream
 * run for seconds) in BF16: recomputing prompt + output gives the continuation of an uninterrupted run there, while
 * under INT8 the prompt path's activation quantization can flip a near-tie later on (docs/reliability.md). Ten greedy streams run at once; one decode
 * replica is killed (kill -9), or sent SIGTERM, while they stream. Every stream completes with the text of one
 * in-process engine, its usage counting the original prompt and every token once.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MigrationMeshTest {
  static final Path MODEL = ServiceProcess.ROOT.resolve("models/demo").toAbsolutePath();
  static final Duration TIMEOUT = Duration.ofMinutes(3);
  /**
   * Replica B's drain timeout: none, so every stream running there at SIGTERM is cut off and continues elsewhere
   * (whatever the machine's speed); streams that finish within a drain are {@link #aDrainCallLetsRunningStreamsFinish}'s.
   */
  static final Duration DRAIN_TIMEOUT = Duration.ZERO;
  static final int STREAMS = 10, MAX_TOKENS = 960, PROMPT_TOKENS = 24;
  static ServiceProcess kvStore, prefill, decodeA, decodeB, gateway;
  static List<String> decodeProps;
  static LoadedEngine reference;
  static OtlpReceiver traces; // the gateway's spans: each migration is an event with the tokens delivered before it
  static Tokenizer tokenizer;

  @BeforeAll
  static void startMesh() throws Exception {
    kvStore = ServiceProcess.start("kv-store", "migrate-kv-store", List.of("moemesh.kv-store.max-bytes=256M"));
    List<String> engine = List.of("moemesh.engine.model-dir=" + MODEL, "moemesh.engine.kv-cache-memory=64M", "moemesh.engine.threads=1",
        "moemesh.engine.precision=bf16");
    prefill = ServiceProcess.start("prefill-svc", "migrate-prefill",
        DisaggregatedMeshTest.with(engine, "moemesh.prefill.kv-store=" + kvStore.grpcAddress()));
    decodeProps = engine;
    decodeA = ServiceProcess.start("decode-svc", "migrate-decode-a", decodeProps);
    decodeB = ServiceProcess.start("decode-svc", "migrate-decode-b",
        DisaggregatedMeshTest.with(engine, "moemesh.decode.drain-timeout=" + DRAIN_TIMEOUT.toMillis() + "ms"));
    traces = new OtlpReceiver();
    gateway = ServiceProcess.start("gateway", "migrate-gateway", List.of("moemesh.gateway.model-dir=" + MODEL,
        "moemesh.otlp.endpoint=" + traces.endpoint(), "quarkus.otel.bsp.schedule.delay=100ms",
        "moemesh.gateway.max-queue-wait=1h", "moemesh.gateway.prefill.replicas=" + prefill.grpcAddress(),
        "moemesh.gateway.decode.replicas=" + decodeA.grpcAddress() + "," + decodeB.grpcAddress()));
    reference = LoadedEngine.open(ConfigMappings.engine(Map.of("moemesh.engine.model-dir", MODEL.toString(),
        "moemesh.engine.kv-cache-memory", "64M", "moemesh.engine.precision", "bf16")),
        KvConnector.NONE, (done, total) -> {});
    tokenizer = Tokenizer.load(MODEL);
    for (ServiceProcess p : List.of(kvStore, prefill, decodeA, decodeB, gateway)) p.awaitReady(DisaggregatedMeshTest.READY);
  }

  @AfterAll
  static void stopMesh() throws Exception {
    for (ServiceProcess p : new ServiceProcess[] {gateway, decodeA, decodeB, prefill, kvStore}) if (p != null) p.close();
    if (tokenizer != null) tokenizer.close();
    if (reference != null) reference.close();
    if (traces != null) traces.close();
  }

  @Test
  @Order(1)
  void killingADecodeReplicaMidStreamLosesNoStream() throws Exception {
    Scrape g0 = gateway.scrape();
    List<Sse> streams = startStreams("kill", 300, STREAMS);
    awaitAllStreaming(streams, decodeA, decodeB);
    long killedAt = System.nanoTime();
    decodeA.kill();
    for (Sse s : streams) s.result.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    Scrape g = gateway.scrape();
    double migrated = g.delta(g0, "moemesh_gateway_migrations_total{reason=\"unavailable\"}")
        + g.delta(g0, "moemesh_gateway_migrations_total{reason=\"incomplete\"}");
    assertThat(migrated).as("streams continued on the other replica").isPositive();
    double resumed = g.delta(g0, "moemesh_gateway_migration_resume_seconds_count");
    double meanResume = g.delta(g0, "moemesh_gateway_migration_resume_seconds_sum") / resumed;
    long worstGapMs = streams.stream().mapToLong(s -> s.longestGapAfter(killedAt)).max().orElseThrow() / 1_000_000;
    System.out.printf("kill -9 of a decode replica: %.0f of %d streams migrated; resume (gateway, loss to the next token) mean %.0f ms;"
        + " longest client-side gap after the kill %d ms%n", migrated, STREAMS, meanResume * 1000, worstGapMs);
    // back to two replicas for the next test, on the same ports (the gateway's configured address)
    decodeA = ServiceProcess.start("decode-svc", "migrate-decode-a-again", decodeProps, decodeA.httpPort, decodeA.grpcPort);
    assertEveryStreamMatchesOneEngine(streams, 300);
    decodeA.awaitReady(DisaggregatedMeshTest.READY);
  }

  @Test
  @Order(2)
  void sigtermDrainsADecodeReplicaAndItsStreamsFinishElsewhere() throws Exception {
    awaitRoutable(decodeA);
    Scrape g0 = gateway.scrape();
    List<Sse> streams = startStreams("drain", 400, STREAMS);
    awaitAllStreaming(streams, decodeA, decodeB);
    long sigterm = System.nanoTime();
    decodeB.terminate();
    // the JVM's own shutdown after the drain (Quarkus, the engine's threads) on a loaded 2-core box: a few seconds
    assertThat(decodeB.awaitExit(DRAIN_TIMEOUT.plusSeconds(20))).as("the drained replica exits").isTrue();
    long exitMs = (System.nanoTime() - sigterm) / 1_000_000;
    System.out.printf("SIGTERM of a decode replica (drain timeout %d ms): exited after %d ms%n", DRAIN_TIMEOUT.toMillis(), exitMs);
    assertEveryStreamMatchesOneEngine(streams, 400);
    Scrape g = gateway.scrape();
    double drained = g.delta(g0, "moemesh_gateway_migrations_total{reason=\"drain\"}");
    double other = g.delta(g0, "moemesh_gateway_migrations_total{reason=\"unavailable\"}")
        + g.delta(g0, "moemesh_gateway_migrations_total{reason=\"incomplete\"}");
    System.out.printf("SIGTERM: %.0f streams cut off at the drain timeout and continued elsewhere, %.0f lost otherwise%n", drained, other);
    assertThat(drained).as("the streams still running at the drain timeout moved with the drain marker").isPositive();
    assertThat(other).as("a drain loses no stream to a broken connection").isZero();
  }

  /**
   * A planner's Drain call on the last decode replica while it streams: it answers once they all finished there (none
   * cut off within the timeout), and from then on the replica is out: readiness 503, Load UNAVAILABLE with the drain
   * marker, and the gateway, with no decode replica left, answers 503.
   */
  @Test
  @Order(3)
  void aDrainCallLetsRunningStreamsFinish() throws Exception {
    List<Sse> streams = startStreams("finish", 500, 4);
    awaitAllStreaming(streams, decodeA);
    var channel = io.grpc.ManagedChannelBuilder.forTarget(decodeA.grpcAddress()).usePlaintext().build();
    try {
      long start = System.nanoTime();
      var drained = io.moemesh.proto.decode.v1.DecodeGrpc.newBlockingStub(channel).withDeadlineAfter(3, TimeUnit.MINUTES)
          .drain(io.moemesh.proto.common.v1.DrainRequest.newBuilder()
              .setTimeout(com.google.protobuf.Duration.newBuilder().setSeconds(120)).build());
      System.out.printf("Drain call: %d streams finished in %d ms, %d cut off%n", drained.getFinished(),
          (System.nanoTime() - start) / 1_000_000, drained.getCutOff());
      assertThat(drained.getCutOff()).isZero();
      assertThat(drained.getFinished()).isPositive();
      assertThat(streams).as("the Drain call answers once they are done").allMatch(s -> s.chunks.get() > 0 && s.finishReason != null);
      assertEveryStreamMatchesOneEngine(streams, 500);
      var load = org.assertj.core.api.Assertions.catchThrowableOfType(io.grpc.StatusRuntimeException.class,
          () -> io.moemesh.proto.decode.v1.DecodeGrpc.newBlockingStub(channel).load(io.moemesh.proto.common.v1.LoadReportRequest.getDefaultInstance()));
      assertThat(io.moemesh.proto.drain.DrainMarker.isDrain(load)).as(String.valueOf(load)).isTrue();
    } finally {
      channel.shutdownNow();
    }
    var ready = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://localhost:" + decodeA.httpPort + "/q/health/ready")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(ready.statusCode()).as(ready.body()).isEqualTo(503);
    assertThat(ready.body()).contains("draining");
    await().atMost(TIMEOUT).until(() -> {
      var refused = new Sse("after-drain", prompt(1, PROMPT_TOKENS));
      refused.result.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
      return "HTTP 503".equals(refused.error);
    });
  }

  /** Greedy streams, each its own prompt, {@link #MAX_TOKENS} tokens with EOS ignored (long enough to be cut). */
  private static List<Sse> startStreams(String name, int seed, int count) {
    List<Sse> streams = new ArrayList<>();
    for (int i = 0; i < count; i++) streams.add(new Sse(name + "-" + i, prompt(seed + i, PROMPT_TOKENS)));
    return streams;
  }

  /** Every stream has tokens from decode (not just the prefill's first), and each replica runs some of them. */
  private static void awaitAllStreaming(List<Sse> streams, ServiceProcess... replicas) {
    await().atMost(TIMEOUT).pollInterval(Duration.ofMillis(5)).until(() -> streams.stream().allMatch(s -> s.chunks.get() >= 3 || s.done()));
    assertThat(streams).as("none finished before the replica goes").noneMatch(Sse::done);
    for (ServiceProcess replica : replicas)
      assertThat(replica.scrape().value("vllm:num_requests_running")).as(replica.name + " runs streams").isPositive();
  }

  /**
   * Until the gateway's readiness lists the replica as reachable: its poller takes a replica back once a Load answers,
   * and a channel to a restarted address answers only after its reconnect backoff.
   */
  private static void awaitRoutable(ServiceProcess replica) {
    var http = HttpClient.newHttpClient();
    var ready = HttpRequest.newBuilder(URI.create("http://localhost:" + gateway.httpPort + "/q/health/ready")).build();
    await().atMost(TIMEOUT).pollInterval(Duration.ofMillis(100)).until(() -> http.send(ready, HttpResponse.BodyHandlers.ofString())
        .body().replace(" ", "").contains("\"decode@" + replica.grpcAddress() + "\":\"reachable\""));
  }

  /**
   * Each stream against one in-process engine, leg by leg: the tokens of an uninterrupted run up to its first cut, then
   * for each migration (the gateway span's {@code moemesh.migration} events say after how many tokens) a run of the
   * prompt followed by every token delivered so far. That is what a migration computes; it is the uninterrupted run
   * itself where recomputing prompt + output reproduces decode's numbers bit for bit, which the naive-MLA prompt path
   * and the absorbed decode path need not (docs/reliability.md): how many streams equal the uninterrupted run is printed.
   */
  private static void assertEveryStreamMatchesOneEngine(List<Sse> streams, int seed) throws Exception {
    var greedy = SamplingParams.greedy().toBuilder().ignoreEos(true).build();
    List<io.moemesh.engine.RequestStream> uninterrupted = new ArrayList<>(); // batched: the engine is batch invariant
    for (int i = 0; i < streams.size(); i++)
      uninterrupted.add(reference.engine().submit(GenerationRequest.of("ref-" + streams.get(i).id, prompt(seed + i, PROMPT_TOKENS), greedy, MAX_TOKENS)));
    int sameAsUninterrupted = 0;
    for (int i = 0; i < streams.size(); i++) {
      Sse s = streams.get(i);
      s.result.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
      assertThat(s.error).as("stream %s failed", s.id).isNull();
      assertThat(s.finishReason).as(s.id).isEqualTo("length");
      assertThat(s.usage.path("prompt_tokens").asInt()).as(s.id).isEqualTo(PROMPT_TOKENS);
      assertThat(s.usage.path("completion_tokens").asInt()).as(s.id).isEqualTo(MAX_TOKENS);
      int[] prompt = prompt(seed + i, PROMPT_TOKENS);
      int[] expected = uninterrupted.get(i).await(TIMEOUT).tokenIds();
      if (s.text.toString().equals(tokenizer.decode(expected, true))) sameAsUninterrupted++;
      for (int cut : cuts(s.id)) { // the legs: prompt + the tokens delivered before the cut, then what that computes
        int[] legPrompt = java.util.stream.IntStream.concat(Arrays.stream(prompt), Arrays.stream(expected, 0, cut)).toArray();
        int[] leg = reference.engine().submit(GenerationRequest.of("ref-" + s.id + "-" + cut, legPrompt, greedy, MAX_TOKENS - cut))
            .await(TIMEOUT).tokenIds();
        expected = java.util.stream.IntStream.concat(Arrays.stream(expected, 0, cut), Arrays.stream(leg)).toArray();
      }
      assertThat(s.text.toString()).as("stream %s, cut after %s tokens", s.id, cuts(s.id)).isEqualTo(tokenizer.decode(expected, true));
    }
    System.out.printf("%d of %d streams give the text of an uninterrupted run%n", sameAsUninterrupted, streams.size());
  }

  /** The tokens delivered before each migration of the stream, from its gateway span's events. */
  private static List<Integer> cuts(String streamId) {
    var span = await().atMost(TIMEOUT).until(() -> traces.all().stream()
        .filter(sp -> sp.service().equals("gateway") && streamId.equals(sp.attributes().get("moemesh.client_request_id"))).findFirst(),
        Optional::isPresent).orElseThrow();
    return span.events().stream().filter(e -> e.name().equals("moemesh.migration"))
        .map(e -> Integer.parseInt(e.attributes().get("moemesh.migration.tokens_delivered"))).toList();
  }

  /** One streaming completion read as it arrives: its text, finish reason, usage, and when each chunk came. */
  static final class Sse {
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static final ObjectMapper JSON = new ObjectMapper();
    final String id;
    final AtomicInteger chunks = new AtomicInteger();
    final List<Long> arrivals = java.util.Collections.synchronizedList(new ArrayList<>());
    final StringBuilder text = new StringBuilder();
    final AtomicLong doneAt = new AtomicLong();
    final CompletableFuture<Void> result;
    volatile String finishReason, error;
    volatile JsonNode usage;

    Sse(String id, int[] prompt) {
      this.id = id;
      String body = "{\"model\": \"demo\", \"prompt\": " + Arrays.toString(prompt) + ", \"max_tokens\": " + MAX_TOKENS
          + ", \"temperature\": 0, \"ignore_eos\": true, \"stream\": true, \"stream_options\": {\"include_usage\": true}}";
      var request = HttpRequest.newBuilder(URI.create("http://localhost:" + gateway.httpPort + "/v1/completions"))
          .header("Content-Type", "application/json").header("X-Request-Id", id).POST(HttpRequest.BodyPublishers.ofString(body)).build();
      result = HTTP.sendAsync(request, HttpResponse.BodyHandlers.ofLines()).thenAccept(response -> {
        if (response.statusCode() != 200) error = "HTTP " + response.statusCode();
        response.body().filter(l -> l.startsWith("data: ")).map(l -> l.substring(6)).forEach(this::event);
        doneAt.set(System.nanoTime());
      });
    }

    private void event(String data) {
      if (data.equals("[DONE]")) return;
      try {
        JsonNode json = JSON.readTree(data);
        if (json.has("error")) error = json.get("error").toString();
        for (JsonNode c : json.path("choices")) {
          text.append(c.path("text").asText());
          if (c.hasNonNull("finish_reason")) finishReason = c.get("finish_reason").asText();
        }
        if (json.hasNonNull("usage")) usage = json.get("usage");
        arrivals.add(System.nanoTime());
        chunks.incrementAndGet();
      } catch (java.io.IOException e) {
        error = "unreadable event: " + data;
      }
    }

    boolean done() {
      return result.isDone();
    }

    /** The longest wait between chunks (or from {@code since} to the first chunk) after {@code since}. */
    long longestGapAfter(long since) {
      long last = since, worst = 0;
      synchronized (arrivals) {
        for (long t : arrivals) {
          if (t < since) continue;
          worst = Math.max(worst, t - last);
          last = t;
        }
      }
      return worst;
    }
  }
}
