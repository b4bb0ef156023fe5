package io.moemesh.e2e;

import static io.moemesh.e2e.DisaggregatedMeshTest.prompt;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.moemesh.engine.GenerationRequest;
import io.moemesh.engine.KvConnector;
import io.moemesh.engine.LoadedEngine;
import io.moemesh.enginehost.ConfigMappings;
import io.moemesh.model.demo.DemoCheckpoint;
import io.moemesh.model.sampling.SamplingParams;
import io.moemesh.proto.auth.MeshAuth;
import io.moemesh.proto.auth.MeshKey;
import io.moemesh.proto.common.v1.SampledToken;
import io.moemesh.proto.decode.v1.DecodeGrpc;
import io.moemesh.proto.decode.v1.GenerateRequest;
import io.moemesh.proto.decode.v1.GenerateResponse;
import io.moemesh.proto.kvstore.v1.GetRequest;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.prefill.v1.KvTicket;
import io.moemesh.proto.prefill.v1.PrefillGrpc;
import io.moemesh.proto.prefill.v1.PrefillRequest;
import io.moemesh.telemetry.testing.Scrape;
import io.moemesh.tokenizer.Tokenizer;
import io.moemesh.tokenizer.TokenizerFiles;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Cancellation is a tree (docs/architecture.md, "Prefill/decode disaggregation", step 5): a client that leaves at any
 * stage of its request frees the prefill request, the decode request and the store object, checked through the
 * services' metrics — no pages used on prefill or decode, no object writing, live or pinned in kv-store.
 *
 * <p>Its own mesh, set up so every stage lasts: prefill runs one request at a time in chunks of 4 tokens (a long
 * prompt takes ~120 steps) and gives objects a 2 s lease; decode runs one request at a time and extends a waiting
 * request's lease to 2 s; a "stuck store" (a socket that never answers) holds decode's slot with a request loading
 * from it for as long as a test wants.
 */
class CancellationMeshTest {
  @TempDir static Path workDir; // the checkpoint; removed after the class
  static final Duration TIMEOUT = Duration.ofSeconds(60);
  /** Well under the 60 s deadline of decode's KV load: freeing must not wait for that deadline. */
  static final Duration PROMPTLY = Duration.ofSeconds(30);
  static final Duration LEASE = Duration.ofSeconds(2);
  static Path model;
  static ServiceProcess kvStore, prefill, decode, gateway;
  static ManagedChannel prefillChannel, decodeChannel, storeChannel;
  static io.grpc.ClientInterceptor credentials;
  static ServerSocket stuckStore;
  static LoadedEngine reference;
  static Tokenizer tokenizer;

  @BeforeAll
  static void startMesh() throws Exception {
    model = workDir.resolve("tiny");
    DemoCheckpoint.writeShipped("tiny", model, 11, DemoCheckpoint.Format.BF16, TokenizerFiles::write, (done, total) -> {});
    byte[] secret = new byte[32];
    new java.security.SecureRandom().nextBytes(secret);
    Path keyFile = Files.write(workDir.resolve("mesh.key"), secret);
    String meshKey = MeshKey.PROPERTY + "=" + keyFile; // every service: internal calls carry and check credentials
    kvStore = ServiceProcess.start("kv-store", "cancel-kv-store", List.of("moemesh.kv-store.max-bytes=64M", meshKey));
    List<String> engine = List.of("moemesh.engine.model-dir=" + model, "moemesh.engine.kv-cache-memory=16M",
        "moemesh.engine.threads=1", "moemesh.engine.max-running-requests=1", meshKey);
    var prefillProps = new ArrayList<>(engine);
    prefillProps.addAll(List.of("moemesh.prefill.kv-store=" + kvStore.grpcAddress(), "moemesh.engine.max-batched-tokens=4",
        "moemesh.prefill.kv-lease=" + LEASE.toSeconds() + "s"));
    prefill = ServiceProcess.start("prefill-svc", "cancel-prefill", prefillProps);
    var decodeProps = new ArrayList<>(engine);
    decodeProps.add("moemesh.decode.kv-lease-extension=" + LEASE.toSeconds() + "s");
    stuckStore = new ServerSocket(0); // accepts connections (the kernel's backlog) and never answers
    decodeProps.add("moemesh.decode.kv-stores=" + kvStore.grpcAddress() + ",localhost:" + stuckStore.getLocalPort());
    decode = ServiceProcess.start("decode-svc", "cancel-decode", decodeProps);
    // prefill computes 4 tokens a step here, so queues of prompts must not be refused for their predicted wait
    gateway = ServiceProcess.start("gateway", "cancel-gateway", List.of("moemesh.gateway.model-dir=" + model, meshKey,
        "moemesh.gateway.max-queue-wait=1h",
        "moemesh.gateway.prefill.replicas=" + prefill.grpcAddress(), "moemesh.gateway.decode.replicas=" + decode.grpcAddress()));
    reference = LoadedEngine.open(ConfigMappings.engine(Map.of("moemesh.engine.model-dir", model.toString(), "moemesh.engine.kv-cache-memory", "16M")),
        KvConnector.NONE, (done, total) -> {});
    tokenizer = Tokenizer.load(model);
    for (ServiceProcess p : List.of(kvStore, prefill, decode, gateway)) p.awaitReady(DisaggregatedMeshTest.READY);
    credentials = new MeshAuth(MeshKey.read(keyFile)).clientInterceptor();
    prefillChannel = ManagedChannelBuilder.forTarget(prefill.grpcAddress()).usePlaintext().intercept(credentials).build();
    decodeChannel = ManagedChannelBuilder.forTarget(decode.grpcAddress()).usePlaintext().intercept(credentials).build();
    storeChannel = ManagedChannelBuilder.forTarget(kvStore.grpcAddress()).usePlaintext().intercept(credentials).build();
  }

  @AfterAll
  static void stopMesh() throws Exception {
    for (ManagedChannel c : new ManagedChannel[] {prefillChannel, decodeChannel, storeChannel}) if (c != null) c.shutdownNow();
    for (ServiceProcess p : new ServiceProcess[] {gateway, decode, prefill, kvStore}) if (p != null) p.close();
    if (stuckStore != null) stuckStore.close();
    if (tokenizer != null) tokenizer.close();
    if (reference != null) reference.close();
  }

  @BeforeEach
  void startsIdle() {
    awaitIdle(TIMEOUT);
  }

  /** (a) before prefill starts, (b) queued in prefill's engine, (c) mid-prefill with the put stream open. */
  @Test
  void clientsLeavingBeforeAndDuringPrefillLeaveNothingBehind() throws Exception {
    Scrape p0 = prefill.scrape(), d0 = decode.scrape(), k0 = kvStore.scrape(), g0 = gateway.scrape();
    List<Socket> clients = new ArrayList<>();
    for (int i = 0; i < 5; i++) clients.add(stream("pre-" + i, prompt(200 + i, 480), 8, List.of()));
    await().atMost(TIMEOUT).pollInterval(Duration.ofMillis(10)).until(() -> {
      Scrape p = prefill.scrape(), k = kvStore.scrape();
      return p.value("vllm:num_requests_running") == 1 && p.value("vllm:num_requests_waiting") == 4 // (c) and 4 × (b)
          && k.value("moemesh_kvstore_objects{state=\"writing\"}") == 5
          && k.delta(k0, "moemesh_kvstore_put_bytes_total") > 0; // the running one's layers are streaming
    });
    clients.add(stream("pre-5", prompt(205, 480), 8, List.of())); // (a): gone before its prefill could start
    for (Socket c : clients) c.close();

    awaitIdle(PROMPTLY);
    Scrape p = prefill.scrape(), k = kvStore.scrape();
    double aborted = p.delta(p0, "vllm:request_success_total{finished_reason=\"abort\",model_name=\"tiny\"}");
    assertThat(aborted).as("the 5 queued or running, and the 6th if it reached the engine").isBetween(5.0, 6.0);
    assertThat(p.delta(p0, "vllm:time_to_first_token_seconds_count")).as("no prefill reached its first token").isZero();
    assertThat(decode.scrape().delta(d0, "vllm:e2e_request_latency_seconds_count")).as("decode never saw one").isZero();
    assertThat(k.delta(k0, "moemesh_kvstore_puts_total{outcome=\"committed\"}")).isZero();
    assertThat(k.delta(k0, "moemesh_kvstore_puts_total{outcome=\"revoked\"}") + k.delta(k0, "moemesh_kvstore_puts_total{outcome=\"failed\"}"))
        .as("every object opened was dropped").isEqualTo(aborted);
    assertThat(gateway.scrape().delta(g0, "moemesh_gateway_requests_total{endpoint=\"completion\",status=\"499\"}")).isEqualTo(6);
  }

  /** (d) a ticket nobody redeems (the gateway died between the legs): the object ends with its lease. */
  @Test
  void anUnredeemedTicketExpiresWithItsLease() {
    Scrape k0 = kvStore.scrape();
    var prefilled = PrefillGrpc.newBlockingStub(prefillChannel).withDeadlineAfter(60, TimeUnit.SECONDS).prefill(PrefillRequest.newBuilder()
        .setRequestId("orphan").addAllPromptTokenIds(ids(prompt(31, 24))).setSampling(IGNORE_EOS).build());
    assertThat(prefilled.hasTicket()).isTrue();
    assertThat(storeSays("orphan")).isEqualTo("live");
    await().atMost(TIMEOUT).until(() -> kvStore.scrape().delta(k0, "moemesh_kvstore_expired_total") == 1);
    assertThat(storeSays("orphan")).contains("does not exist");
  }

  /** (d) through the gateway: a stop string in the prefill's token ends the choice between the legs. */
  @Test
  void aStopStringInTheFirstTokenReleasesTheObjectAtOnce() throws Exception {
    int[] p = IntStream.range(40, 80).mapToObj(seed -> prompt(seed, 30)).filter(q -> firstText(q).strip().length() > 1).findFirst().orElseThrow();
    String stop = firstText(p);
    var response = complete("stop-first", p, 20, List.of(stop));
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    assertThat(response.body()).contains("\"finish_reason\":\"stop\"");
    String key = meshId(response.body()); // the object's key is the mesh's id, not the client's X-Request-Id
    await().atMost(PROMPTLY).until(() -> storeSays(key).contains("was released"));
    awaitIdle(PROMPTLY);
  }

  /** (e) decode loading the KV (WAITING_FOR_REMOTE_KV, pages reserved) from a store that does not answer. */
  @Test
  void aClientLeavingWhileDecodeLoadsFreesThePagesAtOnce() {
    Context.CancellableContext blocker = loadingFromTheStuckStore("stuck-1");
    blocker.cancel(null);
    awaitIdle(PROMPTLY);
  }

  /** (e) queued at decode (WAITING, its ticket not loaded) behind a request that holds the only slot. */
  @Test
  void aClientLeavingWhileQueuedAtDecodeReleasesTheObject() throws Exception {
    Context.CancellableContext blocker = loadingFromTheStuckStore("stuck-2");
    try (Socket client = stream("queued", prompt(51, 30), 8, List.of())) {
      String key = meshId(firstEvent(client)); // the prefill's token streams before decode queues the request
      await().atMost(TIMEOUT).until(() -> decode.scrape().value("vllm:num_requests_waiting") == 2);
      assertThat(storeSays(key)).isEqualTo("live");
      client.close();
      await().atMost(PROMPTLY).until(() -> storeSays(key).contains("was released"));
    }
    await().atMost(PROMPTLY).until(() -> decode.scrape().value("vllm:num_requests_waiting") == 1);
    blocker.cancel(null);
    awaitIdle(PROMPTLY);
  }

  /** Decode keeps a queued request's object alive past its lease, and the request completes with the right text. */
  @Test
  void aRequestQueuedAtDecodeLongerThanItsLeaseStillFindsItsObject() throws Exception {
    Scrape k0 = kvStore.scrape();
    Context.CancellableContext blocker = loadingFromTheStuckStore("stuck-3");
    int[] p = prompt(61, 30);
    var answer = HttpClient.newHttpClient().sendAsync(completion("patient", p, 8, List.of(), false), HttpResponse.BodyHandlers.ofString());
    await().atMost(TIMEOUT).until(() -> decode.scrape().value("vllm:num_requests_waiting") == 2);
    // committed before decode queued it, so its 2 s lease would have ended (and the 1 s reaper run) within this
    // the one object in kv-store (the blocker's ticket names the stuck store)
    await().during(LEASE.plusSeconds(3)).atMost(LEASE.plusSeconds(30))
        .until(() -> kvStore.scrape().value("moemesh_kvstore_objects{state=\"live\"}") == 1);
    blocker.cancel(null);
    var response = answer.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    int[] expected = reference.engine().submit(GenerationRequest.of("patient", p, SamplingParams.greedy(), 8)).await(TIMEOUT).tokenIds();
    assertThat(new com.fasterxml.jackson.databind.ObjectMapper().readTree(response.body()).at("/choices/0/text").asText())
        .isEqualTo(tokenizer.decode(expected, true));
    assertThat(storeSays(meshId(response.body()))).contains("was released");
    assertThat(kvStore.scrape().delta(k0, "moemesh_kvstore_expired_total")).isZero();
    awaitIdle(PROMPTLY);
  }

  /** The mesh runs with a key: a call without its credentials, or with another mesh's, reaches no service code. */
  @Test
  void internalCallsWithoutTheMeshsCredentialsAreRefused() throws Exception {
    byte[] otherKey = new byte[32];
    new java.security.SecureRandom().nextBytes(otherKey);
    var stranger = new MeshAuth(MeshKey.read(Files.write(workDir.resolve("other.key"), otherKey))).clientInterceptor();
    for (ServiceProcess service : List.of(kvStore, prefill, decode)) {
      for (io.grpc.ClientInterceptor as : new io.grpc.ClientInterceptor[] {null, stranger}) {
        var builder = ManagedChannelBuilder.forTarget(service.grpcAddress()).usePlaintext();
        if (as != null) builder.intercept(as);
        ManagedChannel channel = builder.build();
        try {
          Runnable call = switch (service.name) {
            case "cancel-kv-store" -> () -> KvStoreGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
                .get(GetRequest.newBuilder().setKey("anything").build()).hasNext();
            case "cancel-prefill" -> () -> PrefillGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
                .prefill(PrefillRequest.newBuilder().setRequestId("intruder").addAllPromptTokenIds(ids(prompt(91, 8))).build());
            default -> () -> DecodeGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
                .generate(GenerateRequest.newBuilder().setRequestId("intruder").addAllPromptTokenIds(ids(prompt(92, 8)))
                    .setMaxTokens(4).build()).hasNext();
          };
          org.assertj.core.api.Assertions.assertThatThrownBy(call::run).as(service.name + (as == null ? " without credentials" : " with another key"))
              .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
                assertThat(e.getStatus().getDescription()).isEqualTo(as == null ? "missing mesh credentials (x-moemesh-auth)" : "invalid mesh credentials");
              });
        } finally {
          channel.shutdownNow();
        }
      }
    }
    assertThat(storeSays("anything")).as("the mesh's own credentials pass").contains("does not exist");
    awaitIdle(PROMPTLY);
  }

  /** Decode dials only the stores it is configured with, never an address a request names. */
  @Test
  void aTicketNamingAnUnlistedStoreIsRefused() {
    int[] p = prompt(93, 12);
    var ticket = KvTicket.newBuilder().setStoreAddress("localhost:1").setObjectKey("elsewhere").setNumTokens(p.length);
    var request = GenerateRequest.newBuilder().setRequestId("elsewhere").addAllPromptTokenIds(ids(p)).setSampling(IGNORE_EOS)
        .setMaxTokens(4).setTicket(ticket).setFirstToken(SampledToken.newBuilder().setTokenId(7)).build();
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> DecodeGrpc.newBlockingStub(decodeChannel).withDeadlineAfter(10, TimeUnit.SECONDS).generate(request).hasNext())
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
          assertThat(e.getStatus().getDescription()).contains("localhost:1", "moemesh.decode.kv-stores");
        });
    awaitIdle(PROMPTLY);
  }

  /** A client's X-Request-Id only correlates: two requests at once with the same one are two requests. */
  @Test
  void twoRequestsWithTheSameClientIdAreServedApart() throws Exception {
    int[] a = prompt(81, 24), b = prompt(82, 24);
    var client = HttpClient.newHttpClient();
    var first = client.sendAsync(completion("twin", a, 6, List.of(), false), HttpResponse.BodyHandlers.ofString());
    var second = client.sendAsync(completion("twin", b, 6, List.of(), false), HttpResponse.BodyHandlers.ofString());
    var mapper = new com.fasterxml.jackson.databind.ObjectMapper();
    Set<String> ids = new java.util.HashSet<>();
    for (var pair : List.of(Map.entry(a, first), Map.entry(b, second))) {
      var response = pair.getValue().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
      assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
      assertThat(response.headers().firstValue("X-Request-Id")).contains("twin");
      int[] expected = reference.engine().submit(GenerationRequest.of("twin", pair.getKey(), SamplingParams.greedy(), 6))
          .await(TIMEOUT).tokenIds();
      assertThat(mapper.readTree(response.body()).at("/choices/0/text").asText()).isEqualTo(tokenizer.decode(expected, true));
      ids.add(meshId(response.body()));
    }
    assertThat(ids).hasSize(2);
    awaitIdle(PROMPTLY);
  }

  /** (f) mid-decode. */
  @Test
  void aClientLeavingMidDecodeLeavesNothingBehind() throws Exception {
    String key;
    try (Socket client = stream("mid-decode", prompt(71, 20), 400, List.of())) {
      var in = new java.io.BufferedReader(new java.io.InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
      List<String> events = new java.util.ArrayList<>();
      for (String line; events.size() < 5 && (line = in.readLine()) != null; ) if (line.startsWith("data: ")) events.add(line);
      assertThat(events).hasSize(5);
      assertThat(decode.scrape().value("vllm:num_requests_running")).isOne();
      key = meshId(events.getFirst().substring("data: ".length()));
    }
    awaitIdle(PROMPTLY);
    assertThat(storeSays(key)).contains("was released");
  }

  // ---- stages ---------------------------------------------------------------------------------------------------

  static final io.moemesh.proto.common.v1.SamplingParams IGNORE_EOS =
      io.moemesh.proto.common.v1.SamplingParams.newBuilder().setIgnoreEos(true).build();

  /** A decode request whose ticket names the stuck store: it loads (pages reserved) until cancelled. */
  static Context.CancellableContext loadingFromTheStuckStore(String id) {
    int[] p = prompt(id.hashCode(), 30);
    var ticket = KvTicket.newBuilder().setStoreAddress("localhost:" + stuckStore.getLocalPort()).setObjectKey(id).setNumTokens(p.length);
    var request = GenerateRequest.newBuilder().setRequestId(id).addAllPromptTokenIds(ids(p)).setSampling(IGNORE_EOS).setMaxTokens(8)
        .setTicket(ticket).setFirstToken(SampledToken.newBuilder().setTokenId(7)).build();
    Context.CancellableContext call = Context.current().withCancellation();
    call.run(() -> DecodeGrpc.newStub(decodeChannel).generate(request, new StreamObserver<GenerateResponse>() {
      @Override public void onNext(GenerateResponse value) {}
      @Override public void onError(Throwable t) {}
      @Override public void onCompleted() {}
    }));
    await().atMost(TIMEOUT).until(() -> {
      Scrape d = decode.scrape();
      return d.value("vllm:num_requests_waiting") == 1 && d.value("vllm:kv_cache_usage_perc") > 0; // WAITING_FOR_REMOTE_KV
    });
    return call;
  }

  /** Waits until no pages are used on prefill or decode, no request is there, and kv-store holds nothing writing, live or pinned. */
  static void awaitIdle(Duration timeout) {
    await().atMost(timeout).pollInterval(Duration.ofMillis(50)).untilAsserted(() -> {
      for (ServiceProcess engine : List.of(prefill, decode)) {
        Scrape s = engine.scrape();
        assertThat(s.value("vllm:num_requests_running") + s.value("vllm:num_requests_waiting")).as(engine.name + " requests").isZero();
        assertThat(s.value("vllm:kv_cache_usage_perc")).as(engine.name + " pages").isZero();
      }
      Scrape k = kvStore.scrape();
      for (String state : List.of("writing", "live", "pinned"))
        assertThat(k.value("moemesh_kvstore_objects{state=\"" + state + "\"}")).as("kv-store objects " + state).isZero();
    });
  }

  /** The response's {@code id}: the mesh's own request id, which keys the RPCs and the KV object. */
  static String meshId(String json) {
    try {
      String id = new com.fasterxml.jackson.databind.ObjectMapper().readTree(json).path("id").asText();
      assertThat(id).startsWith("cmpl-");
      return id;
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** The JSON of the first server-sent event on a streaming response's socket. */
  static String firstEvent(Socket client) throws IOException {
    var in = new java.io.BufferedReader(new java.io.InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) if (line.startsWith("data: ")) return line.substring("data: ".length());
    throw new IOException("the stream ended before its first event");
  }

  /** "live", or why kv-store cannot serve the object (its NOT_FOUND description: released, expired, gone). */
  static String storeSays(String key) {
    var frames = KvStoreGrpc.newBlockingStub(storeChannel).withDeadlineAfter(10, TimeUnit.SECONDS).get(GetRequest.newBuilder().setKey(key).build());
    try {
      while (frames.hasNext()) frames.next();
      return "live";
    } catch (StatusRuntimeException e) {
      assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
      return e.getStatus().getDescription();
    }
  }

  // ---- clients ----------------------------------------------------------------------------------------------------

  static String firstText(int[] prompt) {
    try {
      int[] first = reference.engine().submit(GenerationRequest.of("first", prompt, SamplingParams.greedy(), 1)).await(TIMEOUT).tokenIds();
      return tokenizer.decode(first, true);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  static String body(int[] prompt, int maxTokens, List<String> stop, boolean stream) {
    var body = new StringBuilder("{\"model\": \"tiny\", \"prompt\": ").append(Arrays.toString(prompt)).append(", \"max_tokens\": ")
        .append(maxTokens).append(", \"temperature\": 0, \"stream\": ").append(stream);
    if (!stop.isEmpty()) body.append(", \"stop\": ").append(new com.fasterxml.jackson.databind.ObjectMapper().valueToTree(stop).toString());
    return body.append('}').toString();
  }

  static HttpRequest completion(String id, int[] prompt, int maxTokens, List<String> stop, boolean stream) {
    return HttpRequest.newBuilder(URI.create("http://localhost:" + gateway.httpPort + "/v1/completions")).header("Content-Type", "application/json")
        .header("X-Request-Id", id).POST(HttpRequest.BodyPublishers.ofString(body(prompt, maxTokens, stop, stream))).build();
  }

  static HttpResponse<String> complete(String id, int[] prompt, int maxTokens, List<String> stop) throws Exception {
    return HttpClient.newHttpClient().send(completion(id, prompt, maxTokens, stop, false), HttpResponse.BodyHandlers.ofString());
  }

  /** A streaming completion on a raw socket, request sent: closing the socket is the client leaving. */
  static Socket stream(String id, int[] prompt, int maxTokens, List<String> stop) throws IOException {
    byte[] bytes = body(prompt, maxTokens, stop, true).getBytes(StandardCharsets.UTF_8);
    Socket socket = new Socket("localhost", gateway.httpPort);
    socket.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nX-Request-Id: " + id
        + "\r\nContent-Length: " + bytes.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
    socket.getOutputStream().write(bytes);
    socket.getOutputStream().flush();
    socket.setSoTimeout((int) TIMEOUT.toMillis());
    return socket;
  }

  static List<Integer> ids(int[] tokens) {
    return IntStream.of(tokens).boxed().toList();
  }
}
