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
import io.moemesh.tokenizer.TokenizerFiles;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A fuzz test of the gateway's HTTP API (issue #29): one real gateway process, fed generated hostile requests, one
 * test per category with a fixed seed and number of cases ({@link Fuzz}: reproducible cases, shrinking, the summary
 * table; {@link FuzzInputs}: the generators). Every answer must arrive within {@link #ANSWER}, be a 4xx or a 503 (or a
 * 2xx where the route can succeed, or the stub's refusal as a stream's error event), never another 5xx, and carry
 * OpenAI's error shape {@code {"error": {"message", "type", "param", "code"}}} as {@code application/json}; after each category
 * {@code /health} answers 200 and a fixed valid request gets its usual answer; the process is alive at the end.
 *
 * <p>The gateway's decode replica is a stub in this JVM that answers {@code Load} (so the gateway is ready, and every
 * request is parsed and validated: with no reachable decode replica the gateway answers 503 before it reads a body) and
 * refuses every {@code Generate} with RESOURCE_EXHAUSTED, so a request the gateway finds valid ends in a 429 that names
 * the stub; the prefill replica is a port where nothing listens. The body limit is 64 KiB, so oversized bodies are cheap.
 */
class GatewayFuzzTest {
  static final Duration ANSWER = Duration.ofSeconds(10);
  static final long SEED = 29;
  static final int CASES = 400;
  static final String REFUSAL = "fuzz decode stub: no engine here";
  private static final ObjectMapper JSON = new ObjectMapper();
  static Path workDir;
  static Server decodeStub;
  static ServiceProcess gateway;
  static Fuzz fuzz;

  @BeforeAll
  static void startGateway() throws Exception {
    workDir = Files.createTempDirectory("moemesh-fuzz-");
    Path model = workDir.resolve(FuzzInputs.MODEL);
    DemoCheckpoint.writeShipped("tiny", model, 11, DemoCheckpoint.Format.BF16, TokenizerFiles::write, (done, total) -> {});
    int decodePort = ServiceProcess.freePort(), deadPort = ServiceProcess.freePort();
    decodeStub = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", decodePort)).addService(new RefusingDecode())
        .build().start();
    gateway = ServiceProcess.start("gateway", "fuzz-gateway", List.of("moemesh.gateway.model-dir=" + model,
        "moemesh.gateway.decode.replicas=127.0.0.1:" + decodePort, "moemesh.gateway.prefill.replicas=127.0.0.1:" + deadPort,
        "moemesh.gateway.max-body-size=" + FuzzInputs.MAX_BODY));
    gateway.awaitReady(DisaggregatedMeshTest.READY);
    fuzz = new Fuzz(SEED, gateway.httpPort, GatewayFuzzTest::judge);
  }

  @AfterAll
  static void stopGateway() throws Exception {
    try {
      if (gateway != null) {
        assertThat(gateway.alive()).as("the gateway process is alive after the fuzzing").isTrue();
        assertHealthy();
      }
    } finally {
      if (fuzz != null) System.out.println(fuzz.report());
      if (gateway != null) gateway.close();
      if (decodeStub != null) decodeStub.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
      if (workDir != null) try (Stream<Path> files = Files.walk(workDir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  /** After each category: still serving, still validating, still reaching its replica. */
  @AfterEach
  void stillHealthy() throws Exception {
    assertThat(gateway.alive()).as("the gateway process is alive").isTrue();
    assertHealthy();
  }

  // ---- the categories ----

  @Test
  void chatBodies() {
    fuzz.run("chat/completions bodies", CASES, FuzzInputs.chatBody()
        .map(body -> post("/v1/chat/completions", "application/json", FuzzInputs.utf8(body), false)));
  }

  @Test
  void completionBodies() {
    fuzz.run("completions bodies", CASES, FuzzInputs.completionBody()
        .map(body -> post("/v1/completions", "application/json", FuzzInputs.utf8(body), false)));
  }

  @Test
  void tokenizeBodies() {
    fuzz.run("tokenize/detokenize bodies", 200, FuzzInputs.serverRouteBody()
        .map(pathAndBody -> post(pathAndBody.getKey(), "application/json", FuzzInputs.utf8(pathAndBody.getValue()), true)));
  }

  @Test
  void malformedBytes() {
    // Jackson reads UTF-16 and a BOM too: /tokenize may then answer 200 (chat and completions: the stub's 429)
    Gen<String> path = Gen.of(FuzzInputs.POST_PATHS);
    Gen<String> type = FuzzInputs.contentType();
    Gen<byte[]> body = FuzzInputs.malformedBody();
    fuzz.run("malformed bodies", CASES, random -> {
      String p = path.next(random);
      return post(p, type.next(random), body.next(random), !p.startsWith("/v1/"));
    });
  }

  @Test
  void httpLevel() {
    Gen<byte[]> bodies = Gen.of("{\"model\":\"tiny\",\"prompt\":\"hi\",\"max_tokens\":2}",
        "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", "{\"prompt\":\"hi\"}", "{}")
        .map(FuzzInputs::utf8).orNull(0.5);
    Gen<String> methods = FuzzInputs.method(), targets = FuzzInputs.target();
    Gen<List<Map.Entry<String, String>>> headers = FuzzInputs.headers();
    fuzz.run("HTTP level", CASES, random -> {
      String method = methods.next(random), target = targets.next(random), path = route(target);
      boolean route = method.equals("GET") && FuzzInputs.GET_ROUTES.contains(path)
          || method.equals("POST") && (path.equals("/tokenize") || path.equals("/detokenize"));
      return new RawHttp.Request(method, target, headers.next(random), bodies.next(random), route);
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

  /** A POST; {@code maySucceed}: the route can answer 2xx to a valid body (the chat and completion routes cannot, here). */
  static RawHttp.Request post(String path, String contentType, byte[] body, boolean maySucceed) {
    List<Map.Entry<String, String>> headers = new ArrayList<>();
    if (contentType != null) headers.add(Map.entry("Content-Type", contentType));
    return new RawHttp.Request("POST", path, headers, body, maySucceed);
  }

  /** Sends one case and judges its answer. */
  static Fuzz.Verdict judge(RawHttp.Request request) {
    RawHttp.Answer answer;
    try {
      answer = RawHttp.send(gateway.httpPort, request, ANSWER);
    } catch (RawHttp.NoAnswer hang) {
      return new Fuzz.Verdict(Fuzz.Outcome.HUNG, 0, "no answer within " + ANSWER + " (" + hang.getMessage() + ")");
    } catch (IOException e) {
      return new Fuzz.Verdict(Fuzz.Outcome.FAILED, 0, "no HTTP answer: " + e);
    }
    if (knownGap(request, answer)) return new Fuzz.Verdict(Fuzz.Outcome.KNOWN_GAP, answer.status(), null);
    String problem = problem(request, answer);
    return problem == null ? new Fuzz.Verdict(Fuzz.Outcome.PASSED, answer.status(), null)
        : new Fuzz.Verdict(Fuzz.Outcome.FAILED, answer.status(), problem + "\nanswer: " + answer);
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
      if (!request.maySucceed()) return streamedRefusalProblem(answer);
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
    String shape = errorShapeProblem(root);
    if (shape != null) return shape;
    if (status == 429 && !root.get("error").get("message").asText().contains(REFUSAL)) return "a 429 that did not come from the decode stub";
    return null;
  }

  /** What is wrong with {@code root} as OpenAI's {@code {"error": {"message", "type", "param", "code"}}}, or null. */
  static String errorShapeProblem(JsonNode root) {
    JsonNode error = root == null ? null : root.get("error");
    if (error == null || !error.isObject()) return "no \"error\" object";
    if (!error.path("message").isTextual() || error.path("message").asText().isEmpty()) return "error.message is not a non-empty string";
    if (!error.path("type").isTextual()) return "error.type is not a string";
    if (!error.has("param") || !(error.get("param").isNull() || error.get("param").isTextual())) return "error.param is not null or a string";
    if (!error.has("code") || !(error.get("code").isNull() || error.get("code").isTextual())) return "error.code is not null or a string";
    return null;
  }

  /**
   * What is wrong with a 2xx to a request that cannot succeed here, or null if it is the stub's refusal of a valid
   * stream: an admitted stream's status line and headers go out at once (docs/reliability.md), so the refusal that is
   * otherwise a 429 ends the stream as an error event in OpenAI's shape.
   */
  static String streamedRefusalProblem(RawHttp.Answer answer) {
    String type = answer.header("Content-Type");
    if (type == null || !type.startsWith("text/event-stream")) return "a " + answer.status() + " for a request that cannot succeed";
    List<String> events = Stream.of(answer.text().split("\n\n")).filter(e -> e.startsWith("data: "))
        .map(e -> e.substring("data: ".length())).filter(data -> !data.equals("[DONE]")).toList();
    if (events.isEmpty()) return "a stream without events for a request that cannot succeed";
    JsonNode last;
    try {
      last = JSON.readTree(events.getLast());
    } catch (IOException e) {
      return "the stream's last event is not JSON: " + e.getMessage();
    }
    String shape = errorShapeProblem(last);
    if (shape != null) return "the stream's last event: " + shape;
    return last.get("error").get("message").asText().contains(REFUSAL) ? null : "a stream that ended in an error not from the decode stub";
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
        FuzzInputs.utf8("{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}"), false), ANSWER);
    assertThat(valid.status()).as("a valid request: %s", valid).isEqualTo(429);
    assertThat(valid.text()).contains(REFUSAL);
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
