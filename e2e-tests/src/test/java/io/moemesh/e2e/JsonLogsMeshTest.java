package io.moemesh.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moemesh.model.demo.DemoCheckpoint;
import io.moemesh.tokenizer.TokenizerFiles;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Logs as Kubernetes collects them (docs/architecture.md, "Observability"): a gateway started with
 * {@code QUARKUS_LOG_CONSOLE_JSON_ENABLED=true}, as deploy/k8s sets it, writes one JSON object per line, and the access
 * line of a request that came with a W3C {@code traceparent} carries that trace id, so an operator can go from the log
 * line to the trace. A decode process started without it logs plain text (the default of {@code bin/moemesh up}).
 */
class JsonLogsMeshTest {
  @TempDir static Path workDir;
  static ServiceProcess decode, gateway;
  static final ObjectMapper JSON = new ObjectMapper();

  @BeforeAll
  static void startMesh() throws Exception {
    Path model = workDir.resolve("tiny");
    DemoCheckpoint.writeShipped("tiny", model, 11, DemoCheckpoint.Format.BF16, TokenizerFiles::write, (done, total) -> {});
    decode = ServiceProcess.start("decode-svc", "json-logs-decode", List.of("moemesh.engine.model-dir=" + model,
        "moemesh.engine.kv-cache-memory=16M", "moemesh.engine.threads=1"));
    gateway = ServiceProcess.start("gateway", "json-logs-gateway", List.of("moemesh.gateway.model-dir=" + model,
        "moemesh.gateway.disaggregation=false", "moemesh.gateway.decode.replicas=" + decode.grpcAddress()),
        Map.of("QUARKUS_LOG_CONSOLE_JSON_ENABLED", "true"));
    for (ServiceProcess p : List.of(decode, gateway)) p.awaitReady(DisaggregatedMeshTest.READY);
  }

  @AfterAll
  static void stopMesh() throws InterruptedException {
    for (ServiceProcess p : new ServiceProcess[] {gateway, decode}) if (p != null) p.close();
  }

  @Test
  void theAccessLineOfARequestCarriesItsTraceId() throws Exception {
    var random = ThreadLocalRandom.current();
    String traceId = HexFormat.of().formatHex(randomBytes(random, 16)), parentSpan = HexFormat.of().formatHex(randomBytes(random, 8));
    String body = "{\"model\": \"tiny\", \"prompt\": [5, 17, 300, 42], \"max_tokens\": 4, \"temperature\": 0}";
    var response = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build().send(HttpRequest.newBuilder(
            URI.create("http://localhost:" + gateway.httpPort + "/v1/completions"))
        .header("Content-Type", "application/json").header("traceparent", "00-" + traceId + "-" + parentSpan + "-01")
        .timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);

    JsonNode access = awaitLine(gateway, line -> line.path("loggerName").asText().equals("io.quarkus.http.access-log")
        && line.path("message").asText().contains("POST /v1/completions"));
    assertThat(access.path("message").asText()).as("status in the access line").contains("\" 200 ");
    assertThat(access.path("level").asText()).isEqualTo("INFO");
    JsonNode mdc = access.path("mdc");
    assertThat(mdc.path("traceId").asText()).as("the access line's trace: %s", access).isEqualTo(traceId);
    assertThat(mdc.path("spanId").asText()).as("the gateway's server span, a child of the client's").matches("[0-9a-f]{16}")
        .isNotEqualTo(parentSpan).isNotEqualTo("0000000000000000");
  }

  @Test
  void jsonIsOnlyOnWhereItIsSwitchedOn() throws Exception {
    assertThat(quarkusLines(gateway)).as("the gateway's lines of Quarkus' own logger").isNotEmpty()
        .allSatisfy(line -> assertThat(JSON.readTree(line).path("loggerName").asText()).isNotEmpty());
    assertThat(quarkusLines(decode)).as("decode's, in plain text").isNotEmpty().noneMatch(line -> line.startsWith("{"));
  }

  /** The lines that name Quarkus' startup, in either format ("Profile prod activated"). */
  static List<String> quarkusLines(ServiceProcess p) throws IOException {
    return Files.readAllLines(log(p)).stream().filter(l -> l.contains("Profile prod activated")).toList();
  }

  /** The first JSON line of the service's log that matches; the access line is written as the response ends, so polled. */
  static JsonNode awaitLine(ServiceProcess p, java.util.function.Predicate<JsonNode> match) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    List<JsonNode> seen = new ArrayList<>();
    do {
      seen.clear();
      for (String l : Files.readAllLines(log(p))) {
        if (!l.startsWith("{")) continue;
        JsonNode line = JSON.readTree(l);
        if (match.test(line)) return line;
        seen.add(line);
      }
      Thread.sleep(100);
    } while (System.nanoTime() < deadline);
    throw new AssertionError("no matching JSON line in " + log(p) + "; JSON lines: " + seen);
  }

  static Path log(ServiceProcess p) {
    return ServiceProcess.ROOT.resolve("e2e-tests/target/e2e-logs").resolve(p.name + ".log");
  }

  static byte[] randomBytes(ThreadLocalRandom random, int n) {
    byte[] b = new byte[n];
    random.nextBytes(b);
    return b;
  }
}
