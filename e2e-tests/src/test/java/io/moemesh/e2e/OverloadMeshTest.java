package io.moemesh.e2e;

import static io.moemesh.e2e.DisaggregatedMeshTest.prompt;
import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.model.demo.DemoCheckpoint;
import io.moemesh.tokenizer.TokenizerFiles;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three times the load the mesh admits, at once: every request either completes or is refused at once with a 429
 * and {@code Retry-After}; none waits silently. (A gateway admitting 4 generations, before one decode
 * process that runs 2 at a time and computes the prompts itself.)
 */
class OverloadMeshTest {
  @TempDir static Path workDir;
  static final int ADMITTED = 4;
  static ServiceProcess decode, gateway;

  @BeforeAll
  static void startMesh() throws Exception {
    Path model = workDir.resolve("tiny");
    DemoCheckpoint.writeShipped("tiny", model, 11, DemoCheckpoint.Format.BF16, TokenizerFiles::write, (done, total) -> {});
    decode = ServiceProcess.start("decode-svc", "overload-decode", List.of("moemesh.engine.model-dir=" + model,
        "moemesh.engine.kv-cache-memory=16M", "moemesh.engine.threads=1", "moemesh.engine.max-running-requests=2"));
    gateway = ServiceProcess.start("gateway", "overload-gateway", List.of("moemesh.gateway.model-dir=" + model,
        "moemesh.gateway.disaggregation=false", "moemesh.gateway.decode.replicas=" + decode.grpcAddress(),
        "moemesh.gateway.max-in-flight=" + ADMITTED));
    for (ServiceProcess p : List.of(decode, gateway)) p.awaitReady(DisaggregatedMeshTest.READY);
  }

  @AfterAll
  static void stopMesh() throws InterruptedException {
    for (ServiceProcess p : new ServiceProcess[] {gateway, decode}) if (p != null) p.close();
  }

  record Answer(int status, String body, Duration took, String retryAfter) {}

  @Test
  void threeTimesTheAdmittedLoadCompletesOrIsRefusedFast() {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(); // no h2c upgrade round trips
    List<CompletableFuture<Answer>> answers = new ArrayList<>();
    for (int i = 0; i < 3 * ADMITTED; i++) {
      String body = "{\"model\": \"tiny\", \"prompt\": " + Arrays.toString(prompt(300 + i, 40))
          + ", \"max_tokens\": 48, \"temperature\": 0, \"ignore_eos\": true, \"stream\": " + (i % 2 == 0) + "}";
      var request = HttpRequest.newBuilder(URI.create("http://localhost:" + gateway.httpPort + "/v1/completions"))
          .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
      long start = System.nanoTime();
      answers.add(client.sendAsync(request, HttpResponse.BodyHandlers.ofString()).thenApply(r -> new Answer(r.statusCode(), r.body(),
          Duration.ofNanos(System.nanoTime() - start), r.headers().firstValue("Retry-After").orElse(null))));
    }
    List<Answer> all = answers.stream().map(f -> f.orTimeout(120, TimeUnit.SECONDS).join()).toList();
    List<Answer> served = all.stream().filter(a -> a.status() == 200).toList();
    List<Answer> refused = all.stream().filter(a -> a.status() == 429).toList();
    assertThat(served.size() + refused.size()).as("every answer is 200 or 429: %s", all).isEqualTo(all.size());
    assertThat(served).as("the admitted ones are served").hasSizeGreaterThanOrEqualTo(ADMITTED);
    assertThat(refused).as("the rest are refused").isNotEmpty().allSatisfy(a -> {
      assertThat(a.took()).as("refused at once (the gateway answers before it reads the body; 2 s for a loaded CI machine)")
          .isLessThan(Duration.ofSeconds(2));
      assertThat(a.retryAfter()).isNotNull();
      assertThat(a.body()).contains("\"type\":\"rate_limit_error\"");
    });
    assertThat(served).allSatisfy(a -> assertThat(a.body()).contains("\"finish_reason\":\"length\""));
  }
}
