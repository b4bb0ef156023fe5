package io.moemesh.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.moemesh.engine.GenerationRequest;
import io.moemesh.engine.KvConnector;
import io.moemesh.engine.LoadedEngine;
import io.moemesh.enginehost.ConfigMappings;
import io.moemesh.model.demo.DemoCheckpoint;
import io.moemesh.model.sampling.SamplingParams;
import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.decode.v1.DecodeGrpc;
import io.moemesh.proto.decode.v1.GenerateRequest;
import io.moemesh.proto.decode.v1.GenerateResponse;
import io.moemesh.proto.decode.v1.LoadFailurePolicy;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.kvstore.v1.StatsRequest;
import io.moemesh.proto.prefill.v1.PrefillGrpc;
import io.moemesh.proto.prefill.v1.PrefillRequest;
import io.moemesh.proto.prefill.v1.PrefillResponse;
import io.moemesh.telemetry.testing.Scrape;
import io.moemesh.tokenizer.TokenizerFiles;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two kv-stores, prefill-svc, decode-svc and the gateway as real processes on the tiny model: a prompt prefilled by
 * one process, its KV moved layer by layer through a store, decoded by another, gives the tokens of one
 * in-process engine — over gRPC and through the OpenAI API. Every service exports its spans to an in-test OTLP
 * receiver, so one request is seen as one trace across the four processes.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class DisaggregatedMeshTest {
  @TempDir static Path workDir; // the checkpoint; removed after the class
  static final Duration READY = Duration.ofMinutes(3);
  static Path model;
  static ServiceProcess kvStore, kvStore2, prefill, prefill2, decode, gateway;
  static ManagedChannel prefillChannel, prefill2Channel, decodeChannel, storeChannel, store2Channel;
  static OtlpReceiver traces;
  static LoadedEngine reference;

  @BeforeAll
  static void startMesh() throws Exception {
    model = workDir.resolve("tiny");
    DemoCheckpoint.writeShipped("tiny", model, 11, DemoCheckpoint.Format.BF16, TokenizerFiles::write, (done, total) -> {});
    traces = new OtlpReceiver();
    List<String> tracing = List.of("moemesh.otlp.endpoint=" + traces.endpoint(), "quarkus.otel.bsp.schedule.delay=100ms");
    // the stores export through OpenTelemetry's standard variables (as deploy/k8s/components/tracing sets them), the rest
    // through the project's key
    Map<String, String> otelEnv = Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", traces.endpoint());
    List<String> store = List.of("moemesh.kv-store.max-bytes=64M", "quarkus.otel.bsp.schedule.delay=100ms");
    kvStore = ServiceProcess.start("kv-store", "kv-store", store, otelEnv);
    kvStore2 = ServiceProcess.start("kv-store", "kv-store-2", store, otelEnv);
    List<String> engine = with(tracing, "moemesh.engine.model-dir=" + model, "moemesh.engine.kv-cache-memory=16M", "moemesh.engine.threads=1");
    var prefillProps = new ArrayList<>(engine);
    prefillProps.addAll(List.of("moemesh.prefill.kv-store=" + kvStore.grpcAddress() + "," + kvStore2.grpcAddress(),
        "moemesh.prefill.kv-store-poll=200ms", "moemesh.engine.max-batched-tokens=16"));
    prefill = ServiceProcess.start("prefill-svc", "prefill", prefillProps);
    // talked to directly, not by the gateway; a loaded CI box may take longer than the default 100 ms to answer a lookup
    prefill2 = ServiceProcess.start("prefill-svc", "prefill-2", with(prefillProps, "moemesh.prefill.stored-prefix.lookup-timeout=5s"));
    decode = ServiceProcess.start("decode-svc", "decode", engine);
    gateway = ServiceProcess.start("gateway", "gateway", with(tracing, "moemesh.gateway.model-dir=" + model,
        "moemesh.gateway.prefill.replicas=" + prefill.grpcAddress(), "moemesh.gateway.decode.replicas=" + decode.grpcAddress()));
    for (ServiceProcess p : List.of(kvStore, kvStore2, prefill, prefill2, decode, gateway)) p.awaitReady(READY);
    prefillChannel = ManagedChannelBuilder.forTarget(prefill.grpcAddress()).usePlaintext().build();
    prefill2Channel = ManagedChannelBuilder.forTarget(prefill2.grpcAddress()).usePlaintext().build();
    decodeChannel = ManagedChannelBuilder.forTarget(decode.grpcAddress()).usePlaintext().build();
    storeChannel = ManagedChannelBuilder.forTarget(kvStore.grpcAddress()).usePlaintext().build();
    store2Channel = ManagedChannelBuilder.forTarget(kvStore2.grpcAddress()).usePlaintext().build();
    reference = LoadedEngine.open(ConfigMappings.engine(Map.of("moemesh.engine.model-dir", model.toString(), "moemesh.engine.kv-cache-memory", "16M")),
        KvConnector.NONE, (done, total) -> {});
  }

  @AfterAll
  static void stopMesh() throws Exception {
    for (ManagedChannel c : new ManagedChannel[] {prefillChannel, prefill2Channel, decodeChannel, storeChannel, store2Channel})
      if (c != null) c.shutdownNow();
    for (ServiceProcess p : new ServiceProcess[] {gateway, decode, prefill, prefill2, kvStore, kvStore2}) if (p != null) p.close();
    if (reference != null) reference.close();
    if (traces != null) traces.close();
  }

  static List<String> with(List<String> common, String... properties) {
    var all = new ArrayList<>(common);
    all.addAll(List.of(properties));
    return all;
  }

  static int[] prompt(long seed, int length) {
    return new SplittableRandom(seed).ints(length, 2, 1000).toArray();
  }

  /** Prefill on one process, decode on another; the prefill's first token, then the decode's. */
  static List<Integer> throughTheMesh(String id, int[] prompt, io.moemesh.proto.common.v1.SamplingParams sampling, int maxTokens) {
    return prefillAndDecode(prefillChannel, id, prompt, sampling, maxTokens).tokens();
  }

  record Legs(PrefillResponse prefilled, List<Integer> tokens) {}

  static Legs prefillAndDecode(ManagedChannel prefillVia, String id, int[] prompt, io.moemesh.proto.common.v1.SamplingParams sampling, int maxTokens) {
    var prefilled = PrefillGrpc.newBlockingStub(prefillVia).withDeadlineAfter(60, TimeUnit.SECONDS).prefill(PrefillRequest.newBuilder()
        .setRequestId(id).addAllPromptTokenIds(IntStream.of(prompt).boxed().toList()).setSampling(sampling).build());
    assertThat(prefilled.hasTicket()).isTrue();
    var request = GenerateRequest.newBuilder().setRequestId(id).addAllPromptTokenIds(IntStream.of(prompt).boxed().toList())
        .setSampling(sampling).setMaxTokens(maxTokens).setTicket(prefilled.getTicket()).setFirstToken(prefilled.getFirstToken())
        .setSampledDraws(prefilled.getSampledDraws()).setOnLoadFailure(LoadFailurePolicy.LOAD_FAILURE_POLICY_FAIL).build();
    List<Integer> tokens = new ArrayList<>(List.of(prefilled.getFirstToken().getTokenId()));
    GenerateResponse last = null;
    for (var it = DecodeGrpc.newBlockingStub(decodeChannel).withDeadlineAfter(60, TimeUnit.SECONDS).generate(request); it.hasNext(); ) {
      last = it.next();
      last.getTokensList().forEach(t -> tokens.add(t.getTokenId()));
    }
    assertThat(last.getError()).isEmpty();
    assertThat(last.getFinishReason()).isEqualTo(FinishReason.FINISH_REASON_LENGTH);
    assertThat(last.getUsage().getCompletionTokens()).isEqualTo(maxTokens);
    return new Legs(prefilled, tokens);
  }

  static List<Integer> inProcess(String id, int[] prompt, SamplingParams params, int maxTokens) throws Exception {
    return IntStream.of(reference.engine().submit(GenerationRequest.of(id, prompt, params, maxTokens)).await(Duration.ofSeconds(60)).tokenIds())
        .boxed().toList();
  }

  @Test
  void aPromptPrefilledHereAndDecodedThereGivesTheTokensOfOneEngine() throws Exception {
    var greedy = io.moemesh.proto.common.v1.SamplingParams.newBuilder().setIgnoreEos(true).build();
    var seeded = io.moemesh.proto.common.v1.SamplingParams.newBuilder().setTemperature(0.8).setTopP(0.9).setSeed(42).setIgnoreEos(true).build();
    assertThat(throughTheMesh("g1", prompt(1, 45), greedy, 12))
        .isEqualTo(inProcess("g1", prompt(1, 45), SamplingParams.greedy().toBuilder().ignoreEos(true).build(), 12));
    assertThat(throughTheMesh("s1", prompt(2, 20), seeded, 10))
        .isEqualTo(inProcess("s1", prompt(2, 20), SamplingParams.greedy().toBuilder().temperature(0.8).topP(0.9).seed(42L).ignoreEos(true).build(), 10));
  }

  /**
   * The stores as a mesh-wide prefix cache: a prompt prefilled and decoded through one prefill replica (decode then
   * releases its object), then a longer prompt sharing its first 48 tokens (3 pages) on the other replica, whose own
   * cache holds none of it: that replica reads the 48 positions from the store instead of computing them, and the
   * request still gives the tokens of one engine.
   */
  @Test
  void aPrefillReplicaReadsAPrefixAnotherOneStoredInsteadOfComputingIt() throws Exception {
    var greedy = io.moemesh.proto.common.v1.SamplingParams.newBuilder().setIgnoreEos(true).build();
    var greedyHere = SamplingParams.greedy().toBuilder().ignoreEos(true).build();
    int[] shared = prompt(30, 50);
    int[] longer = Arrays.copyOf(shared, 70);
    System.arraycopy(prompt(31, 20), 0, longer, 50, 20);
    assertThat(prefillAndDecode(prefillChannel, "px-shared", shared, greedy, 4).tokens()).isEqualTo(inProcess("px-shared", shared, greedyHere, 4));
    int[] other = prompt(32, 40); // shares nothing: the second replica's first request, which warms its code paths
    assertThat(prefillAndDecode(prefill2Channel, "px-other", other, greedy, 4).tokens()).isEqualTo(inProcess("px-other", other, greedyHere, 4));
    double receivedBefore = receivedKvBytes(prefill2);

    Legs legs = prefillAndDecode(prefill2Channel, "px-longer", longer, greedy, 6);
    assertThat(legs.prefilled().getUsage().getCachedPromptTokens()).as("positions read from the store").isEqualTo(48);
    assertThat(legs.tokens()).isEqualTo(inProcess("px-longer", longer, greedyHere, 6));
    var c = reference.config();
    assertThat(receivedKvBytes(prefill2) - receivedBefore).as("3 pages of every layer, BF16")
        .isEqualTo(48.0 * c.numHiddenLayers() * c.latentDim() * 2);
  }

  static double receivedKvBytes(ServiceProcess p) throws Exception {
    return p.scrape().sum("moemesh_kv_transfer_bytes_total{direction=\"received\"}");
  }

  @Test
  void aCompletionThroughTheGatewayIsTheTextOfOneEngine() throws Exception {
    int[] p = prompt(4, 30);
    String body = "{\"model\": \"tiny\", \"prompt\": " + Arrays.toString(p) + ", \"max_tokens\": 10, \"temperature\": 0}";
    var response = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
            URI.create("http://localhost:" + gateway.httpPort + "/v1/completions"))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    var json = new com.fasterxml.jackson.databind.ObjectMapper().readTree(response.body());
    int[] expected = reference.engine().submit(GenerationRequest.of("c1", p, SamplingParams.greedy(), 10)).await(Duration.ofSeconds(60)).tokenIds();
    try (var tokenizer = io.moemesh.tokenizer.Tokenizer.load(model)) {
      assertThat(json.at("/choices/0/text").asText()).isEqualTo(tokenizer.decode(expected, true));
    }
    assertThat(json.at("/usage/prompt_tokens").asInt()).isEqualTo(30);
    assertThat(json.at("/usage/completion_tokens").asInt()).isEqualTo(expected.length);
  }

  /**
   * 32 streams of mixed lengths at once: each complete, with its usage, and each the text of one engine; their
   * prompts' KV went through both stores, about evenly by bytes (prefill picks the store with the most free memory).
   * First, while the stores are equally empty: objects other tests leave would rightly draw the burst to the emptier one.
   */
  @Test
  @Order(1)
  void thirtyTwoConcurrentStreamsEachMatchOneEngine() throws Exception {
    var http = HttpClient.newHttpClient();
    var mapper = new com.fasterxml.jackson.databind.ObjectMapper();
    List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
    List<int[]> prompts = new ArrayList<>();
    for (int i = 0; i < 32; i++) {
      int[] p = prompt(100 + i, 5 + 7 * i % 90);
      prompts.add(p);
      String body = "{\"model\": \"tiny\", \"prompt\": " + Arrays.toString(p) + ", \"max_tokens\": " + (4 + i % 13)
          + ", \"temperature\": 0, \"stream\": true, \"stream_options\": {\"include_usage\": true}}";
      calls.add(http.sendAsync(HttpRequest.newBuilder(URI.create("http://localhost:" + gateway.httpPort + "/v1/completions"))
          .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
          HttpResponse.BodyHandlers.ofString()));
    }
    try (var tokenizer = io.moemesh.tokenizer.Tokenizer.load(model)) {
      for (int i = 0; i < 32; i++) {
        var response = calls.get(i).get(3, TimeUnit.MINUTES);
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        var text = new StringBuilder();
        com.fasterxml.jackson.databind.JsonNode usage = null;
        List<String> events = response.body().lines().filter(l -> l.startsWith("data: ")).map(l -> l.substring(6)).toList();
        assertThat(events.getLast()).isEqualTo("[DONE]");
        for (String e : events.subList(0, events.size() - 1)) {
          var json = mapper.readTree(e);
          json.path("choices").forEach(c -> text.append(c.path("text").asText()));
          if (json.hasNonNull("usage")) usage = json.get("usage");
        }
        int[] expected = reference.engine().submit(GenerationRequest.of("c32-" + i, prompts.get(i), SamplingParams.greedy(), 4 + i % 13))
            .await(Duration.ofSeconds(60)).tokenIds();
        assertThat(text.toString()).as("stream %d", i).isEqualTo(tokenizer.decode(expected, true));
        assertThat(usage.path("prompt_tokens").asInt()).isEqualTo(prompts.get(i).length);
        assertThat(usage.path("completion_tokens").asInt()).isEqualTo(expected.length);
      }
    }
    double first = committedPuts(kvStore), second = committedPuts(kvStore2);
    assertThat(first + second).as("one object per prompt, at least").isGreaterThanOrEqualTo(32);
    // the policy evens the stores' memory, not their object counts (which depend on the order prompts are picked in)
    double bytes1 = putBytes(kvStore), bytes2 = putBytes(kvStore2);
    assertThat(Math.min(bytes1, bytes2) / (bytes1 + bytes2)).as("each store's share of the bytes (%s and %s)", bytes1, bytes2)
        .isGreaterThanOrEqualTo(0.3);
  }

  static double putBytes(ServiceProcess store) throws Exception {
    return store.scrape().sum("moemesh_kvstore_put_bytes_total");
  }

  static double committedPuts(ServiceProcess store) throws Exception {
    return store.scrape().sum("moemesh_kvstore_puts_total{outcome=\"committed\"}");
  }

  /** Live objects over both stores. */
  static long liveObjects() {
    return KvStoreGrpc.newBlockingStub(storeChannel).stats(StatsRequest.getDefaultInstance()).getLiveObjects()
        + KvStoreGrpc.newBlockingStub(store2Channel).stats(StatsRequest.getDefaultInstance()).getLiveObjects();
  }

  /** A client that leaves mid-stream: decode aborts the request, frees its pages, and the store holds nothing. */
  @Test
  void aClientLeavingMidStreamLeavesNoPagesOrObjectsBehind() throws Exception {
    String body = "{\"model\": \"tiny\", \"prompt\": " + Arrays.toString(prompt(7, 40))
        + ", \"max_tokens\": 450, \"temperature\": 0, \"stream\": true}";
    var response = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
            URI.create("http://localhost:" + gateway.httpPort + "/v1/completions"))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofInputStream());
    try (var in = new BufferedReader(new InputStreamReader(response.body(), StandardCharsets.UTF_8))) {
      int events = 0;
      for (String line; events < 3 && (line = in.readLine()) != null; ) if (line.startsWith("data: ")) events++;
      assertThat(events).isEqualTo(3);
    } // closing the body mid-stream drops the connection
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    Scrape metrics = decode.scrape();
    while (System.nanoTime() < deadline) {
      metrics = decode.scrape();
      if (gauge(metrics, "vllm:num_requests_running") == 0 && gauge(metrics, "vllm:kv_cache_usage_perc") == 0) break;
      Thread.onSpinWait();
    }
    assertThat(gauge(metrics, "vllm:num_requests_running")).isZero();
    assertThat(gauge(metrics, "vllm:kv_cache_usage_perc")).isZero();
    assertThat(liveObjects()).isZero();
  }

  /**
   * A completion sent with the client's traceparent: the gateway, prefill-svc, kv-store and decode-svc each export spans
   * of that trace, and together they form one tree under the client's span (every parent is a span of the trace).
   */
  @Test
  void oneRequestIsOneTraceAcrossGatewayPrefillStoreAndDecode() throws Exception {
    byte[] ids = new byte[24];
    new Random().nextBytes(ids);
    ids[0] |= 1; // neither id is all zeros
    ids[16] |= 1;
    String traceId = HexFormat.of().formatHex(ids, 0, 16);
    String clientSpan = HexFormat.of().formatHex(ids, 16, 24);
    String body = "{\"model\": \"tiny\", \"prompt\": " + Arrays.toString(prompt(8, 25)) + ", \"max_tokens\": 5, \"temperature\": 0}";
    var response = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
            URI.create("http://localhost:" + gateway.httpPort + "/v1/completions"))
        .header("Content-Type", "application/json").header("traceparent", "00-" + traceId + "-" + clientSpan + "-01")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);

    Map<String, List<String>> expected = Map.of(
        "gateway", List.of("text_completion tiny", "moemesh.prefill.v1.Prefill/Prefill", "moemesh.decode.v1.Decode/Generate"),
        "prefill-svc", List.of("moemesh.prefill.v1.Prefill/Prefill", "prefill tiny", "kv put", "moemesh.kvstore.v1.KvStore/Put"),
        "kv-store", List.of("moemesh.kvstore.v1.KvStore/Put", "moemesh.kvstore.v1.KvStore/Get", "moemesh.kvstore.v1.KvStore/Release"),
        "decode-svc", List.of("moemesh.decode.v1.Decode/Generate", "decode tiny", "kv get", "moemesh.kvstore.v1.KvStore/Get",
            "moemesh.kvstore.v1.KvStore/Release"));
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    List<OtlpReceiver.ReceivedSpan> trace = traces.trace(traceId);
    while (!complete(trace, expected, clientSpan) && System.nanoTime() < deadline) {
      Thread.sleep(50);
      trace = traces.trace(traceId);
    }
    for (var service : expected.entrySet()) {
      assertThat(trace.stream().filter(s -> s.service().equals(service.getKey())).map(OtlpReceiver.ReceivedSpan::name))
          .as("%s's spans of trace %s", service.getKey(), traceId).containsAll(service.getValue());
    }
    var spanIds = trace.stream().map(OtlpReceiver.ReceivedSpan::spanId).collect(Collectors.toSet());
    assertThat(trace).as("one tree under the client's span").allSatisfy(s -> assertThat(s.parentSpanId()).isIn(
        Stream.concat(spanIds.stream(), Stream.of(clientSpan)).toList()));
    assertThat(trace).filteredOn(s -> s.parentSpanId().equals(clientSpan)).singleElement()
        .satisfies(root -> assertThat(root.service()).isEqualTo("gateway"));
    String objectKey = trace.stream().filter(s -> s.name().equals("kv put")).findFirst().orElseThrow().attributes().get("moemesh.kv.object_key");
    assertThat(trace).filteredOn(s -> s.service().equals("kv-store"))
        .allSatisfy(s -> assertThat(s.attributes().get("moemesh.kv.object_key")).isIn(objectKey, null));
    assertThat(trace).filteredOn(s -> s.name().equals("kv get")).singleElement()
        .satisfies(get -> assertThat(get.attributes()).containsEntry("moemesh.kv.object_key", objectKey)
            .containsEntry("moemesh.kv.bytes", Long.toString(25L * 3 * 40 * 2)));
  }

  /** Every expected span has come and every parent is known. */
  private static boolean complete(List<OtlpReceiver.ReceivedSpan> trace, Map<String, List<String>> expected, String clientSpan) {
    var ids = trace.stream().map(OtlpReceiver.ReceivedSpan::spanId).collect(Collectors.toSet());
    return expected.entrySet().stream().allMatch(e -> trace.stream().filter(s -> s.service().equals(e.getKey()))
        .map(OtlpReceiver.ReceivedSpan::name).toList().containsAll(e.getValue()))
        && trace.stream().allMatch(s -> s.parentSpanId().equals(clientSpan) || ids.contains(s.parentSpanId()));
  }

  /** The value of a metric without labels (or the first series of it). */
  static double gauge(Scrape metrics, String name) {
    return metrics.find(name).orElseThrow(() -> new AssertionError(name + " not exported"));
  }

  @Test
  void theOfficialOpenAiClientWorksAgainstTheGateway() throws Exception {
    var result = NodeClient.run("openai-client.mjs", "http://localhost:" + gateway.httpPort + "/v1", "tiny");
    assertThat(result.exitCode()).as(result.output()).isZero();
    assertThat(result.output()).contains("ok models.list", "ok chat.completions", "ok chat.completions stream", "ok completions", "ok errors");
  }

  @Test
  void theStoreHoldsNoObjectOnceDecodeHasLoadedIt() throws Exception {
    var greedy = io.moemesh.proto.common.v1.SamplingParams.newBuilder().setIgnoreEos(true).build();
    throughTheMesh("r1", prompt(3, 33), greedy, 4);
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (liveObjects() > 0 && System.nanoTime() < deadline) Thread.onSpinWait();
    assertThat(liveObjects()).as("released after the load").isZero();
  }
}
