package io.moemesh.e2e;

import static io.moemesh.e2e.K8sManifests.*;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * deploy/k8s at the "restricted" Pod Security level and behind NetworkPolicies that open each port to its callers only;
 * the KEDA and tracing components keep both.
 */
class DeploySecurityTest {
  @Test
  void everyPodPassesTheRestrictedPodSecurityStandard() throws Exception {
    for (Doc w : base().stream().filter(Doc::isWorkload).toList()) {
      assertThat(RestrictedPodSecurity.violations(w.podSpec())).as(w.name()).isEmpty();
      for (JsonNode c : w.podSpec().path("containers"))
        assertThat(c.path("securityContext").path("readOnlyRootFilesystem").asBoolean()).as(w.name() + ": read-only root").isTrue();
    }
    Assumptions.assumeTrue(onPath("kubectl"), "kubectl is not installed: the overlays' pods (init containers) unchecked");
    for (String k : KUSTOMIZATIONS) {
      int pods = 0;
      for (JsonNode d : rendered(K8S.resolve(k))) {
        if (!d.path("kind").asText().matches("Deployment|StatefulSet")) continue;
        JsonNode pod = d.path("spec").path("template").path("spec");
        assertThat(RestrictedPodSecurity.violations(pod)).as(k + ": " + d.path("metadata").path("name").asText()).isEmpty();
        pods++;
      }
      assertThat(pods).as(k).isEqualTo(6);
    }
  }

  /** The check itself: a pod as kubectl run makes it (root, no securityContext) and a privileged one fail it. */
  @Test
  void theRestrictedCheckRejectsRootAndPrivilegedPods() throws IOException {
    JsonNode plain = YAML.readTree("containers: [{name: app, image: x}]");
    assertThat(RestrictedPodSecurity.violations(plain)).containsExactlyInAnyOrder(
        "containers/app: allowPrivilegeEscalation must be false", "containers/app: capabilities must drop ALL",
        "containers/app: runAsNonRoot must be true", "containers/app: seccompProfile must be RuntimeDefault or Localhost");
    JsonNode privileged = YAML.readTree("""
        hostNetwork: true
        securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
        volumes: [{name: root, hostPath: {path: /}}]
        initContainers:
          - name: setup
            securityContext: {privileged: true, allowPrivilegeEscalation: false, runAsUser: 0, capabilities: {drop: [ALL], add: [SYS_ADMIN]}}
            ports: [{containerPort: 80, hostPort: 80}]
        """);
    assertThat(RestrictedPodSecurity.violations(privileged)).containsExactlyInAnyOrder("hostNetwork is true",
        "volume root is of type hostPath", "initContainers/setup: privileged", "initContainers/setup: adds capability SYS_ADMIN",
        "initContainers/setup: runs as user 0", "initContainers/setup: hostPort 80");
  }

  /**
   * Ingress is denied to every mesh pod but for a policy naming the port: the gateway's HTTP port from anywhere, every
   * other stage's gRPC port from the stages that call it, their HTTP ports from the monitoring namespace only.
   */
  @Test
  void networkPoliciesOpenEachPortOnlyToItsCallers() throws IOException {
    List<Doc> docs = base();
    List<Doc> workloads = docs.stream().filter(Doc::isWorkload).toList();
    List<Doc> policies = docs.stream().filter(d -> d.kind().equals("NetworkPolicy")).toList();
    Map<String, Map<Integer, Set<String>>> open = new HashMap<>(); // workload → port → who may connect
    boolean denyAll = false;
    for (Doc p : policies) {
      JsonNode spec = p.node().path("spec");
      assertThat(spec.path("policyTypes").toString()).as(p.name()).contains("Ingress");
      if (spec.path("ingress").isMissingNode()) {
        denyAll = spec.path("podSelector").path("matchLabels").path("app.kubernetes.io/part-of").asText().equals("moemesh");
        continue;
      }
      Doc w = selected(workloads, spec.path("podSelector").path("matchLabels"), p);
      List<Integer> ports = containerPorts(w.podSpec().path("containers").get(0), null);
      for (JsonNode rule : spec.path("ingress")) {
        Set<String> from = new HashSet<>();
        for (JsonNode f : rule.path("from")) {
          if (f.has("podSelector")) from.add(selected(workloads, f.path("podSelector").path("matchLabels"), p).name());
          else from.add("namespace " + f.path("namespaceSelector").path("matchLabels").path("kubernetes.io/metadata.name").asText());
        }
        if (from.isEmpty()) from.add("anyone");
        for (JsonNode port : rule.path("ports")) {
          assertThat(ports).as(p.name() + " opens a port of " + w.name()).contains(port.path("port").asInt());
          open.computeIfAbsent(w.name(), x -> new HashMap<>()).computeIfAbsent(port.path("port").asInt(), x -> new HashSet<>()).addAll(from);
        }
      }
    }
    assertThat(denyAll).as("a default-deny policy over every mesh pod").isTrue();
    Set<String> monitoring = Set.of("namespace monitoring");
    assertThat(open).isEqualTo(Map.of(
        "moemesh-gateway", Map.of(9100, Set.of("anyone")),
        "moemesh-prefill", Map.of(9201, Set.of("moemesh-gateway"), 9200, monitoring),
        "moemesh-decode", Map.of(9301, Set.of("moemesh-gateway"), 9300, monitoring),
        "moemesh-kv-store", Map.of(9401, Set.of("moemesh-gateway", "moemesh-prefill", "moemesh-decode"), 9400, monitoring),
        "moemesh-expert-routed", Map.of(9501, Set.of("moemesh-prefill", "moemesh-decode", "moemesh-expert-routed"), 9500, monitoring),
        "moemesh-expert-shared", Map.of(9501, Set.of("moemesh-prefill", "moemesh-decode"), 9500, monitoring)));
  }

  /**
   * The components render onto an overlay: KEDA replaces the autoscaled stages' HPAs with ScaledObjects on the same
   * workloads; tracing adds a collector (restricted like the rest) and points every stage's OTLP export at it.
   */
  @Test
  void theKedaAndTracingComponentsRenderOntoAnOverlay() throws Exception {
    Assumptions.assumeTrue(onPath("kubectl"), "kubectl is not installed");
    Path dir = ROOT.resolve("e2e-tests/target/components-overlay");
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("kustomization.yaml"), """
        apiVersion: kustomize.config.k8s.io/v1beta1
        kind: Kustomization
        resources: [../../../deploy/k8s/overlays/local]
        components: [../../../deploy/k8s/components/keda, ../../../deploy/k8s/components/tracing]
        """);
    List<JsonNode> docs = rendered(dir);
    assertThat(docs).noneMatch(d -> d.path("kind").asText().equals("HorizontalPodAutoscaler"));
    Set<String> deployments = new HashSet<>();
    for (JsonNode d : docs) {
      if (!d.path("kind").asText().matches("Deployment|StatefulSet")) continue;
      if (d.path("kind").asText().equals("Deployment")) deployments.add(d.path("metadata").path("name").asText());
      JsonNode pod = d.path("spec").path("template").path("spec");
      assertThat(RestrictedPodSecurity.violations(pod)).as(d.path("metadata").path("name").asText()).isEmpty();
      if (d.path("metadata").path("name").asText().equals("moemesh-otel-collector")) continue;
      assertThat(pod.path("containers").get(0).path("envFrom").toString()).as(d.path("metadata").path("name").asText() + " reads the config")
          .contains("moemesh-config");
    }
    List<String> scaled = docs.stream().filter(d -> d.path("kind").asText().equals("ScaledObject"))
        .map(d -> d.path("spec").path("scaleTargetRef").path("name").asText()).toList();
    assertThat(scaled).containsExactlyInAnyOrder("moemesh-gateway", "moemesh-prefill", "moemesh-decode", "moemesh-expert-shared");
    assertThat(deployments).containsAll(scaled).contains("moemesh-otel-collector");
    JsonNode config = docs.stream().filter(d -> d.path("metadata").path("name").asText().equals("moemesh-config")).findFirst().orElseThrow();
    assertThat(config.path("data").path("OTEL_EXPORTER_OTLP_ENDPOINT").asText()).isEqualTo("http://moemesh-otel-collector:4318");
  }
}
