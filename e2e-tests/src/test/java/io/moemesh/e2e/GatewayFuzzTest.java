package io.moemesh.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.moemesh.model.demo.DemoCheckpoint;
import io.moemesh.proto.common.v1.LoadReport;
import io.moemesh.proto.common.v1.LoadReportRequest;
import io.moemesh.proto.decode.v1.DecodeGrpc;
import io.moemesh.proto.decode.v1.GenerateRequest;
import io.moemesh.proto.decode.v1.GenerateResponse;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * A fuzz test of the gateway's HTTP API (issue #29): one real gateway process, fed generated hostile requests (fixed
 * seed and number of tries per property). Every answer must arrive within {@link #ANSWER}, be a 4xx or a 503 (or a 2xx
 * where the route can succeed), never another 5xx, and carry OpenAI's error shape
 * {@code {"error": {"message", "type", "param", "code"}}} as {@code application/json}; after each property
 * {@code /health} answers 200 and a fixed valid request gets its usual answer; the process is alive at the end.
 *
 * <p>The gateway's decode replica is a stub in this JVM that answers {@code Load} (so the gateway is ready, and every
 * request is parsed and validated: with no reachable decode replica the gateway answers 503 before it reads a body) and
 * refuses every {@code Generate} with RESOURCE_EXHAUSTED, so a request the gateway finds valid ends in a 429 that names
 * the stub; the prefill replica is a port where nothing listens. The body limit is 64 KiB, so oversized bodies are cheap.
 */
class GatewayFuzzTest {
  static final Duration ANSWER = Duration.ofSeconds(10);
  static final int TRIES = 400;
  static final String REFUSAL = "fuzz decode stub: no engine here";
  private static final ObjectMapper JSON = new ObjectMapper();
  static Path workDir;
  static Server decodeStub;
  static ServiceProcess gateway;
  /** Per category (property): the cases sent and how they ended, for the report printed at the end. */
  static final Map<String, Tally> TALLIES = new ConcurrentHashMap<>();

  static final class Tally {
    final AtomicInteger tried = new AtomicInteger(), passed = new AtomicInteger(), knownGap = new AtomicInteger(),
        failed = new AtomicInteger(), hung = new AtomicInteger();
    final Map<Integer, AtomicInteger> statuses = new ConcurrentHashMap<>();
  }

  @BeforeContainer
  static void startGateway() throws Exception {
    workDir = Files.createTempDirectory("moemesh-fuzz-");
    Path model = workDir.resolve(FuzzInputs.MODEL);
    DemoCheckpoint.writeShipped("tiny", model, 11, DemoCheckpoint.Format.BF16, (done, total) -> {});
    int decodePort = ServiceProcess.freePort(), deadPort = ServiceProcess.freePort();
    decodeStub = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", decodePort)).addService(new RefusingDecode())
        .build().start();
    gateway = ServiceProcess.start("gateway", "fuzz-gateway", List.of("moemesh.gateway.model-dir=" + model,
        "moemesh.gateway.decode.replicas=127.0.0.1:" + decodePort, "moemesh.gateway.prefill.replicas=127.0.0.1:" + deadPort,
        "moemesh.gateway.max-body-size=" + FuzzInputs.MAX_BODY));
    gateway.awaitReady(DisaggregatedMeshTest.READY);
  }

  @AfterContainer
  static void stopGateway() throws Exception {
    try {
      if (gateway != null) {
        assertThat(gateway.alive()).as("the gateway process is alive after the fuzzing").isTrue();
        assertHealthy();
      }
    } finally {
      System.out.println(report());
      if (gateway != null) gateway.close();
      if (decodeStub != null) decodeStub.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
      if (workDir != null) try (Stream<Path> files = Files.walk(workDir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  /** After each property: still serving, still validating, still reaching its replica. */
  @AfterProperty
  void stillHealthy() throws Exception {
    assertThat(gateway.alive()).as("the gateway process is alive").isTrue();
    assertHealthy();
  }

  // ---- the properties, one per category ----

  @Property(seed = "29", tries = TRIES)
  void chatBodies(@ForAll("chatBody") String body) throws Exception {
    check("chat/completions bodies", post("/v1/chat/completions", "application/json", FuzzInputs.utf8(body)));
  }

  @Property(seed = "29", tries = TRIES)
  void completionBodies(@ForAll("completionBody") String body) throws Exception {
    check("completions bodies", post("/v1/completions", "application/json", FuzzInputs.utf8(body)));
  }

  @Property(seed = "29", tries = 200)
  void tokenizeBodies(@ForAll("serverRouteBody") Map.Entry<String, String> pathAndBody) throws Exception {
    RawHttp.Request r = post(pathAndBody.getKey(), "application/json", FuzzInputs.utf8(pathAndBody.getValue()));
    check("tokenize/detokenize bodies", new RawHttp.Request(r.method(), r.target(), r.headers(), r.body(), true));
  }

  @Property(seed = "29", tries = TRIES)
  void malformedBytes(@ForAll("malformed") RawHttp.Request request) throws Exception {
    check("malformed bodies", request);
  }

  @Property(seed = "29", tries = TRIES)
  void httpLevel(@ForAll("http") RawHttp.Request request) throws Exception {
    check("HTTP level", request);
  }

  @Provide
  Arbitrary<String> chatBody() {
    return FuzzInputs.chatBody();
  }

  @Provide
  Arbitrary<String> completionBody() {
    return FuzzInputs.completionBody();
  }

  @Provide
  Arbitrary<Map.Entry<String, String>> serverRouteBody() {
    return FuzzInputs.serverRouteBody();
  }

  @Provide
  Arbitrary<RawHttp.Request> malformed() {
    // Jackson reads UTF-16 and a BOM too: /tokenize may then answer 200 (chat and completions: the stub's 429)
    return Combinators.combine(Arbitraries.of(FuzzInputs.POST_PATHS), FuzzInputs.contentType(), FuzzInputs.malformedBody())
        .as((path, type, body) -> {
          RawHttp.Request r = post(path, type, body);
          return new RawHttp.Request(r.method(), r.target(), r.headers(), r.body(), !path.startsWith("/v1/"));
        });
  }

  @Provide
  Arbitrary<RawHttp.Request> http() {
    Arbitrary<byte[]> body = Arbitraries.of("{\"model\":\"tiny\",\"prompt\":\"hi\",\"max_tokens\":2}",
        "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", "{\"prompt\":\"hi\"}", "{}")
        .map(FuzzInputs::utf8).injectNull(0.5);
    return Combinators.combine(FuzzInputs.method(), FuzzInputs.target(), FuzzInputs.headers(), body).as((method, target, headers, b) -> {
      String path = route(target);
      boolean route = method.equals("GET") && FuzzInputs.GET_ROUTES.contains(path)
          || method.equals("POST") && (path.equals("/tokenize") || path.equals("/detokenize"));
      return new RawHttp.Request(method, target, headers, b, route);
    });
  }

  /** The route a target reaches after Vert.x' normalization (absolute form, dot segments, repeated and trailing slashes). */
  static String route(String target) {
    String path = target.replaceFirst("^https?://[^/]*", "").replaceAll("[?#].*", "").replace("%2e", ".").replace("%2E", ".");
    path = ("/" + path).replaceAll("/+", "/");
    try {
      path = java.net.URI.create("http://h" + path).normalize().getPath();
    } catch (IllegalArgumentException notAUri) {
      // left as is: such a path matches no route
    }
    return path.length() > 1 && path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
  }

  // ---- the oracle ----

  static RawHttp.Request post(String path, String contentType, byte[] body) {
    List<Map.Entry<String, String>> headers = new ArrayList<>();
    if (contentType != null) headers.add(Map.entry("Content-Type", contentType));
    return new RawHttp.Request("POST", path, headers, body, false);
  }

  /** Sends one case and checks its answer; counts it under {@code category}. */
  static void check(String category, RawHttp.Request request) throws Exception {
    Tally tally = TALLIES.computeIfAbsent(category, c -> new Tally());
    tally.tried.incrementAndGet();
    RawHttp.Answer answer;
    try {
      answer = RawHttp.send(gateway.httpPort, request, ANSWER);
    } catch (RawHttp.NoAnswer hang) {
      tally.hung.incrementAndGet();
      throw new AssertionError("no answer within " + ANSWER + " (" + hang.getMessage() + ")");
    } catch (IOException e) {
      tally.failed.incrementAndGet();
      throw new AssertionError("no HTTP answer: " + e);
    }
    tally.statuses.computeIfAbsent(answer.status(), s -> new AtomicInteger()).incrementAndGet();
    if (knownGap(request, answer)) {
      tally.knownGap.incrementAndGet();
      return;
    }
    String problem = problem(request, answer);
    if (problem != null) {
      tally.failed.incrementAndGet();
      throw new AssertionError(problem + "\nanswer: " + answer);
    }
    tally.passed.incrementAndGet();
  }

  /**
   * Answers that come before any route of the gateway runs, so it cannot shape them (Quarkus exposes no hook for them):
   * Quarkus' empty 400 for a request target {@link java.net.URI} rejects, and Netty's empty 414 and 431 past its
   * limits (a request line over 65536 bytes, a header block over 64 KiB; the gateway's own, lower limits answer in
   * OpenAI's shape). The status is still right and the connection closed: counted apart, not failed.
   */
  static boolean knownGap(RawHttp.Request request, RawHttp.Answer answer) {
    if (answer.body().length > 0 || answer.header("Content-Type") != null) return false;
    return switch (answer.status()) {
      case 400 -> !validUri(request.target());
      case 414 -> request.method().length() + request.target().length() + 10 > 65536;
      case 431 -> request.headers().stream().mapToLong(h -> h.getKey().length() + h.getValue().length() + 4).sum() > 60 * 1024;
      default -> false;
    };
  }

  private static boolean validUri(String target) {
    try {
      new java.net.URI(target);
      return true;
    } catch (java.net.URISyntaxException e) {
      return false;
    }
  }

  /** What is wrong with the answer, or null. */
  static String problem(RawHttp.Request request, RawHttp.Answer answer) {
    int status = answer.status();
    boolean head = request.method().equals("HEAD");
    if (status / 100 == 2) {
      if (!request.maySucceed()) return "a " + status + " for a request that cannot succeed";
      if (answer.body().length == 0) return null; // /health: 200 and no body, as vLLM's
      return head || isJsonObject(answer) ? null : "a " + status + " whose body is not a JSON object";
    }
    if (status / 100 != 4 && status != 503) return "status " + status + ": neither a 4xx nor a 503";
    String type = answer.header("Content-Type");
    if (type == null || !type.startsWith("application/json")) return "Content-Type " + type + ", not application/json";
    if (head) return answer.body().length == 0 ? null : "a body in a HEAD answer";
    JsonNode root;
    try {
      root = JSON.readTree(answer.body());
    } catch (IOException e) {
      return "the body is not JSON: " + e.getMessage();
    }
    JsonNode error = root == null ? null : root.get("error");
    if (error == null || !error.isObject()) return "no \"error\" object";
    if (!error.path("message").isTextual() || error.path("message").asText().isEmpty()) return "error.message is not a non-empty string";
    if (!error.path("type").isTextual()) return "error.type is not a string";
    if (!error.has("param") || !(error.get("param").isNull() || error.get("param").isTextual())) return "error.param is not null or a string";
    if (!error.has("code") || !(error.get("code").isNull() || error.get("code").isTextual())) return "error.code is not null or a string";
    if (status == 429 && !error.get("message").asText().contains(REFUSAL)) return "a 429 that did not come from the decode stub";
    return null;
  }

  private static boolean isJsonObject(RawHttp.Answer answer) {
    String type = answer.header("Content-Type");
    try {
      return type != null && type.startsWith("application/json") && JSON.readTree(answer.body()).isObject();
    } catch (IOException e) {
      return false;
    }
  }

  /** {@code /health} is 200 and a valid request is validated, routed to the stub and refused by it (429). */
  static void assertHealthy() throws Exception {
    RawHttp.Answer health = RawHttp.send(gateway.httpPort, new RawHttp.Request("GET", "/health", List.of(), null, true), ANSWER);
    assertThat(health.status()).as("/health").isEqualTo(200);
    RawHttp.Answer valid = RawHttp.send(gateway.httpPort, post("/v1/chat/completions", "application/json",
        FuzzInputs.utf8("{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}")), ANSWER);
    assertThat(valid.status()).as("a valid request: %s", valid).isEqualTo(429);
    assertThat(valid.text()).contains(REFUSAL);
  }

  /** The per-category table (cases tried, passed, failed, hung) and the statuses seen. */
  static String report() {
    StringBuilder s = new StringBuilder("\nGateway fuzz test (seed 29):\n\n| category | tried | passed (JSON 4xx/503, or 2xx where valid) | known gap (empty 400/414/431 before routing) | failed | hung | statuses |\n|---|---|---|---|---|---|---|\n");
    int[] total = new int[5];
    for (var e : new TreeMap<>(TALLIES).entrySet()) {
      Tally t = e.getValue();
      s.append("| ").append(e.getKey()).append(" | ").append(t.tried).append(" | ").append(t.passed).append(" | ")
          .append(t.knownGap).append(" | ").append(t.failed).append(" | ").append(t.hung).append(" | ")
          .append(new TreeMap<>(t.statuses)).append(" |\n");
      total[0] += t.tried.get();
      total[1] += t.passed.get();
      total[2] += t.knownGap.get();
      total[3] += t.failed.get();
      total[4] += t.hung.get();
    }
    return s.append("| all | ").append(total[0]).append(" | ").append(total[1]).append(" | ").append(total[2]).append(" | ")
        .append(total[3]).append(" | ").append(total[4]).append(" | |\n").toString();
  }

  /** A decode replica that is reachable (answers Load) and refuses every generation. */
  static final class RefusingDecode extends DecodeGrpc.DecodeImplBase {
    @Override
    public void load(LoadReportRequest request, StreamObserver<LoadReport> response) {
      response.onNext(LoadReport.getDefaultInstance());
      response.onCompleted();
    }

    @Override
    public void generate(GenerateRequest request, StreamObserver<GenerateResponse> response) {
      response.onError(Status.RESOURCE_EXHAUSTED.withDescription(REFUSAL).asRuntimeException());
    }
  }
}
