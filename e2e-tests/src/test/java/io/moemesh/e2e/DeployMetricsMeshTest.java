package io.moemesh.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * deploy/k8s names only metrics the services export: one mesh of real processes (a routed shard, the shared experts,
 * kv-store, a prefill and a decode replica on those experts, the gateway) serves a request, every stage's
 * {@code /q/metrics} is read, and every series an autoscaler (through its adapter rule), a KEDA trigger, the dashboard
 * or a document names must be among its stage's. And a pod whose engine cannot load is not alive, so Kubernetes
 * restarts it.
 */
class DeployMetricsMeshTest {
  @TempDir static Path workDir;
  static final Duration READY = Duration.ofMinutes(3);
  static final Path K8S = K8sManifests.K8S;
  static final Map<String, ServiceProcess> STAGES = new LinkedHashMap<>();
  static Map<String, Set<String>> exported;

  @BeforeAll
  static void startMeshAndServeARequest() throws Exception {
    Path model = workDir.resolve("tiny"), config = workDir.resolve("tiny.json");
    try (var in = DemoCheckpoint.class.getResourceAsStream("/io/moemesh/model/configs/tiny.json")) {
      Files.copy(in, config);
    }
    DemoCheckpoint.write(config, model, 13, DemoCheckpoint.Format.BF16, 0f, TokenizerFiles::write, (done, total) -> {});
    int routedGrpc = ServiceProcess.freePort();
    List<String> expert = List.of("moemesh.expert.model-dir=" + model, "moemesh.expert.threads=1", "moemesh.expert.num-shards=1",
        "moemesh.expert.redundant-slots=0");
    // shard 0 runs the balancer, whose figures the dashboard shows
    var routed = ServiceProcess.start("expert-svc", "metrics-expert-routed", with(expert, "moemesh.expert.shard=0",
        "moemesh.expert.balancer.interval=1s", "moemesh.expert.peers=localhost:" + routedGrpc), ServiceProcess.freePort(), routedGrpc);
    STAGES.put("expert-routed", routed);
    var shared = ServiceProcess.start("expert-svc", "metrics-expert-shared", with(expert, "moemesh.expert.role=shared"));
    STAGES.put("expert-shared", shared);
    var kvStore = ServiceProcess.start("kv-store", "metrics-kv-store", List.of("moemesh.kv-store.max-bytes=64M"));
    STAGES.put("kv-store", kvStore);
    List<String> engine = List.of("moemesh.engine.model-dir=" + model, "moemesh.engine.kv-cache-memory=16M", "moemesh.engine.threads=1",
        "moemesh.experts.routed=remote", "moemesh.experts.shards=" + routed.grpcAddress(), "moemesh.experts.redundant-slots=0",
        "moemesh.experts.shared=remote", "moemesh.experts.shared-address=" + shared.grpcAddress());
    var prefill = ServiceProcess.start("prefill-svc", "metrics-prefill", with(engine, "moemesh.prefill.kv-store=" + kvStore.grpcAddress()));
    STAGES.put("prefill", prefill);
    var decode = ServiceProcess.start("decode-svc", "metrics-decode", with(engine, "moemesh.decode.kv-stores=" + kvStore.grpcAddress()));
    STAGES.put("decode", decode);
    var gateway = ServiceProcess.start("gateway", "metrics-gateway", List.of("moemesh.gateway.model-dir=" + model,
        "moemesh.gateway.prefill.replicas=" + prefill.grpcAddress(), "moemesh.gateway.decode.replicas=" + decode.grpcAddress()));
    STAGES.put("gateway", gateway);
    for (ServiceProcess p : STAGES.values()) p.awaitReady(READY);

    var response = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://localhost:" + gateway.httpPort + "/v1/completions"))
        .header("Content-Type", "application/json").timeout(Duration.ofSeconds(120))
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"tiny\", \"prompt\": [5, 6, 7, 8, 9], \"max_tokens\": 8, \"temperature\": 0}"))
        .build(), HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    exported = new LinkedHashMap<>();
    // the request's last counters land as its stream ends: wait until decode has counted it
    await().atMost(Duration.ofSeconds(30)).until(() -> decode.metrics().contains("vllm:request_success_total"));
    for (var e : STAGES.entrySet()) exported.put(e.getKey(), e.getValue().scrape().names());
  }

  @AfterAll
  static void stopMesh() throws Exception {
    for (ServiceProcess p : new ArrayList<>(STAGES.values()).reversed()) p.close();
  }

  private static List<String> with(List<String> base, String... more) {
    var all = new ArrayList<>(base);
    all.addAll(List.of(more));
    return all;
  }

  @Test
  void everyMetricDeployK8sNamesIsExportedByItsStage() throws IOException {
    List<MetricReferences.Reference> references = MetricReferences.in(K8S);
    assertThat(references).as("autoscalers, adapter, KEDA and dashboard queries").hasSizeGreaterThan(20);
    assertThat(MetricReferences.unanswered(references, exported)).as("series deploy/k8s names that its stage does not export").isEmpty();
  }

  /** The check above is not vacuous: a manifest that names a metric after it was renamed fails it, naming the file. */
  @Test
  void aRenamedMetricIsReported() throws IOException {
    Path copy = workDir.resolve("k8s-drifted");
    try (Stream<Path> files = Files.walk(K8S)) {
      for (Path f : files.toList()) {
        Path to = copy.resolve(K8S.relativize(f).toString());
        if (Files.isDirectory(f)) Files.createDirectories(to);
        else Files.writeString(to, Files.readString(f).replace("vllm:num_requests_running", "vllm:num_requests_active")
            .replace("vllm_num_requests_running", "vllm_num_requests_active"));
      }
    }
    List<String> unanswered = MetricReferences.unanswered(MetricReferences.in(copy), exported);
    assertThat(unanswered).anyMatch(u -> u.startsWith("vllm:num_requests_active (stage decode) named by components/keda/scaled-objects.yaml"));
    assertThat(unanswered).anyMatch(u -> u.startsWith("(no adapter rule makes vllm_num_requests_active) (stage decode) named by base/decode.yaml HPA"));
  }

  /** vLLM's {@code /health} semantics: an engine that failed to load fails liveness (with why), so it is restarted. */
  @Test
  void aDecodeReplicaWhoseModelCannotLoadIsNotAlive() throws Exception {
    try (var broken = ServiceProcess.start("decode-svc", "metrics-decode-no-model",
        List.of("moemesh.engine.model-dir=" + workDir.resolve("missing"), "moemesh.engine.kv-cache-memory=16M"))) {
      var live = HttpRequest.newBuilder(URI.create("http://localhost:" + broken.httpPort + "/q/health/live")).timeout(Duration.ofSeconds(5)).build();
      var http = HttpClient.newHttpClient();
      await().atMost(READY).pollInterval(Duration.ofMillis(250)).ignoreExceptions().untilAsserted(() -> {
        var r = http.send(live, HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(r.body()).contains("\"error\"", "missing");
      });
    }
  }
}
