package io.moemesh.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * deploy/k8s holds together without a cluster: every file a kustomization names parses; every Service, ConfigMap,
 * volume claim, autoscaler target and disruption budget points at something that exists; container ports are the
 * ports each service's application.properties sets; every gRPC address in the config names a Service port; every
 * pod passes the restricted Pod Security Standard; every stage's ports are covered by a NetworkPolicy; and, where
 * kubectl is installed, every kustomization renders (the KEDA component on top of an overlay too). The metric names
 * the manifests use are checked against the running services in {@link DeployMetricsMeshTest}. (YAML through
 * jackson-dataformat-yaml, which jinjava brings onto the classpath.)
 */
class DeployManifestsTest {
  static final Path ROOT = ServiceProcess.ROOT.toAbsolutePath().normalize();
  static final Path K8S = ROOT.resolve("deploy/k8s");
  static final YAMLMapper YAML = new YAMLMapper();
  static final List<String> KUSTOMIZATIONS = List.of("base", "overlays/local", "overlays/ascend");
  /** Services not built yet whose ports the manifests fix (the integrator aligns the service to them). */
  static final Map<String, List<Integer>> PLANNED_PORTS = Map.of("expert-svc", List.of(9500, 9501));

  record Doc(Path file, JsonNode node) {
    String kind() { return node.path("kind").asText(); }
    String name() { return node.path("metadata").path("name").asText(); }
    JsonNode podSpec() { return node.path("spec").path("template").path("spec"); }
    JsonNode podLabels() { return node.path("spec").path("template").path("metadata").path("labels"); }
    boolean isWorkload() { return kind().equals("Deployment") || kind().equals("StatefulSet"); }
  }

  static List<JsonNode> read(Path file) throws IOException {
    List<JsonNode> docs = new ArrayList<>();
    try (MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(file.toFile())) {
      while (it.hasNext()) {
        JsonNode d = it.next();
        if (d != null && !d.isNull() && !d.isEmpty()) docs.add(d);
      }
    }
    return docs;
  }

  static List<Doc> base() throws IOException {
    List<Doc> docs = new ArrayList<>();
    for (JsonNode r : read(K8S.resolve("base/kustomization.yaml")).getFirst().path("resources")) {
      Path file = K8S.resolve("base").resolve(r.asText());
      for (JsonNode d : read(file)) docs.add(new Doc(file, d));
    }
    return docs;
  }

  static Map<String, Doc> byKindAndName(List<Doc> docs) {
    Map<String, Doc> out = new HashMap<>();
    for (Doc d : docs) assertThat(out.put(d.kind() + "/" + d.name(), d)).as("duplicate " + d.kind() + "/" + d.name()).isNull();
    return out;
  }

  static boolean selects(JsonNode selector, JsonNode labels) {
    if (selector == null || !selector.isObject() || selector.isEmpty()) return false;
    for (var e : selector.properties()) if (!e.getValue().asText().equals(labels.path(e.getKey()).asText(null))) return false;
    return true;
  }

  @Test
  void everyNamedFileExistsAndEveryDocumentIsAKubernetesObject() throws IOException {
    for (String k : KUSTOMIZATIONS) {
      Path dir = K8S.resolve(k);
      JsonNode kustomization = read(dir.resolve("kustomization.yaml")).getFirst();
      List<Path> files = new ArrayList<>();
      for (JsonNode r : kustomization.path("resources")) files.add(dir.resolve(r.asText()));
      for (JsonNode p : kustomization.path("patches")) if (p.has("path")) files.add(dir.resolve(p.path("path").asText()));
      assertThat(files).as(k).isNotEmpty();
      for (Path f : files) {
        assertThat(f).as(k + " names it").exists();
        if (Files.isDirectory(f)) {
          assertThat(f.resolve("kustomization.yaml")).exists();
          continue;
        }
        for (JsonNode d : read(f)) {
          assertThat(d.path("apiVersion").asText()).as(f + ": apiVersion").isNotEmpty();
          assertThat(d.path("kind").asText()).as(f + ": kind").isNotEmpty();
          assertThat(d.path("metadata").path("name").asText()).as(f + ": metadata.name").isNotEmpty();
        }
      }
    }
  }

  @Test
  void workloadsHaveProbesResourcesAndTheirServicesPorts() throws IOException {
    List<Doc> docs = base();
    var all = byKindAndName(docs);
    List<Doc> workloads = docs.stream().filter(Doc::isWorkload).toList();
    assertThat(workloads).extracting(Doc::name).containsExactlyInAnyOrder("moemesh-gateway", "moemesh-prefill", "moemesh-decode",
        "moemesh-kv-store", "moemesh-expert-routed", "moemesh-expert-shared");
    assertThat(all).containsKeys("StatefulSet/moemesh-kv-store", "StatefulSet/moemesh-expert-routed");
    for (Doc w : workloads) {
      assertThat(selects(w.node().path("spec").path("selector").path("matchLabels"), w.podLabels())).as(w.name() + " selects its pods").isTrue();
      for (JsonNode c : w.podSpec().path("containers")) {
        String where = w.name() + "/" + c.path("name").asText();
        assertThat(c.path("livenessProbe").path("httpGet").path("path").asText()).as(where).isEqualTo("/q/health/live");
        assertThat(c.path("readinessProbe").path("httpGet").path("path").asText()).as(where).isEqualTo("/q/health/ready");
        assertThat(c.path("resources").path("requests").has("cpu")).as(where + " requests cpu").isTrue();
        assertThat(c.path("resources").path("requests").has("memory")).as(where + " requests memory").isTrue();
        List<Integer> ports = containerPorts(c, null);
        assertThat(ports).as(where + ": ports of " + module(c)).containsExactlyInAnyOrderElementsOf(configuredPorts(module(c)));
        for (JsonNode from : c.path("envFrom")) {
          String cm = from.path("configMapRef").path("name").asText();
          assertThat(all).as(where + " reads ConfigMap " + cm).containsKey("ConfigMap/" + cm);
        }
      }
      for (JsonNode v : w.podSpec().path("volumes")) {
        String claim = v.path("persistentVolumeClaim").path("claimName").asText(null);
        if (claim != null) assertThat(all).as(w.name() + " mounts " + claim).containsKey("PersistentVolumeClaim/" + claim);
      }
      if (w.kind().equals("StatefulSet")) {
        Doc svc = all.get("Service/" + w.node().path("spec").path("serviceName").asText());
        assertThat(svc).as(w.name() + "'s serviceName").isNotNull();
        assertThat(svc.node().path("spec").path("clusterIP").asText()).as("headless " + svc.name()).isEqualTo("None");
      }
    }
  }

  @Test
  void servicesBudgetsAndAutoscalersPointAtWorkloads() throws IOException {
    List<Doc> docs = base();
    var all = byKindAndName(docs);
    List<Doc> workloads = docs.stream().filter(Doc::isWorkload).toList();
    Set<String> withBudget = new HashSet<>(), withService = new HashSet<>();
    for (Doc d : docs) {
      switch (d.kind()) {
        case "Service" -> {
          Doc w = selected(workloads, d.node().path("spec").path("selector"), d);
          withService.add(w.name());
          JsonNode container = w.podSpec().path("containers").get(0);
          for (JsonNode p : d.node().path("spec").path("ports")) {
            JsonNode target = p.path("targetPort");
            List<Integer> match = containerPorts(container, target.isTextual() ? target.asText() : null);
            assertThat(match).as(d.name() + " port " + p.path("name").asText() + " → a container port").isNotEmpty();
            if (target.isInt()) assertThat(containerPorts(container, null)).contains(target.asInt());
            if ("None".equals(d.node().path("spec").path("clusterIP").asText())) {
              assertThat(p.path("port").asInt()).as("headless " + d.name() + ": port = container port").isEqualTo(match.getFirst());
            }
          }
        }
        case "PodDisruptionBudget" -> withBudget.add(selected(workloads, d.node().path("spec").path("selector").path("matchLabels"), d).name());
        case "HorizontalPodAutoscaler" -> {
          JsonNode ref = d.node().path("spec").path("scaleTargetRef");
          assertThat(all).as(d.name() + " scales").containsKey(ref.path("kind").asText() + "/" + ref.path("name").asText());
          assertThat(d.node().path("spec").path("metrics")).as(d.name() + " metrics").isNotEmpty();
        }
        default -> { }
      }
    }
    assertThat(withBudget).as("a disruption budget per stage").containsExactlyInAnyOrderElementsOf(workloads.stream().map(Doc::name).toList());
    assertThat(withService).as("a Service per stage").containsExactlyInAnyOrderElementsOf(workloads.stream().map(Doc::name).toList());
    var scaled = docs.stream().filter(d -> d.kind().equals("HorizontalPodAutoscaler")).map(d -> d.node().path("spec").path("scaleTargetRef").path("name").asText()).toList();
    assertThat(scaled).as("routed shards: a fixed count, the placement's").containsExactlyInAnyOrder("moemesh-gateway", "moemesh-prefill",
        "moemesh-decode", "moemesh-expert-shared");
  }

  /** {@code [dns:///]name:port} or a StatefulSet pod's {@code name-N.service:port}; a dns:/// name must be a headless Service. */
  private static final Pattern ADDRESS = Pattern.compile("^(dns:///)?([a-z0-9-]+?)(?:-(\\d+)\\.([a-z0-9-]+))?:(\\d+)$");

  @Test
  void everyAddressInTheConfigNamesAServicePort() throws IOException {
    var all = byKindAndName(base());
    JsonNode data = all.get("ConfigMap/moemesh-config").node().path("data");
    int checked = 0;
    for (var e : data.properties()) {
      if (!e.getKey().matches(".*_(REPLICAS|KV_STORE|EXPERTS_SHARDS|EXPERT_PEERS|SHARED_ADDRESS)")) continue;
      for (String address : e.getValue().asText().split(",")) {
        Matcher m = ADDRESS.matcher(address.trim());
        assertThat(m.matches()).as(e.getKey() + "=" + address).isTrue();
        String service = m.group(4) != null ? m.group(4) : m.group(2);
        Doc svc = all.get("Service/" + service);
        assertThat(svc).as(address + ": Service " + service).isNotNull();
        if (m.group(1) != null) // resolved to one replica per pod: only a headless Service lists the pods
          assertThat(svc.node().path("spec").path("clusterIP").asText()).as(address).isEqualTo("None");
        if (m.group(4) != null) {
          // a pod's own name <statefulset>-<ordinal>.<service>: the StatefulSet uses that service and has the pod
          Doc sts = all.get("StatefulSet/" + m.group(2));
          assertThat(sts).as(address).isNotNull();
          assertThat(sts.node().path("spec").path("serviceName").asText()).isEqualTo(service);
          assertThat(Integer.parseInt(m.group(3))).isLessThan(sts.node().path("spec").path("replicas").asInt());
        }
        List<Integer> ports = new ArrayList<>();
        svc.node().path("spec").path("ports").forEach(p -> ports.add(p.path("port").asInt()));
        assertThat(ports).as(address).contains(Integer.parseInt(m.group(5)));
        checked++;
      }
    }
    assertThat(checked).as("prefill, decode, 2 stores, 4 routed shards for the engines and as peers, shared experts").isEqualTo(13);
    assertThat(data.path("MOEMESH_EXPERTS_SHARDS").asText().split(",")).as("the engines' shard list, one per shard")
        .hasSize(data.path("MOEMESH_EXPERT_NUM_SHARDS").asInt());
    assertThat(data.path("MOEMESH_EXPERT_PEERS").asText()).as("the shards' peers: the engines' shard list")
        .isEqualTo(data.path("MOEMESH_EXPERTS_SHARDS").asText());
  }

  @Test
  void overlayPatchesNameBaseObjectsAndImageTagsAgree() throws IOException {
    var all = byKindAndName(base());
    Set<String> tags = new HashSet<>();
    for (String k : KUSTOMIZATIONS) {
      Path dir = K8S.resolve(k);
      JsonNode kustomization = read(dir.resolve("kustomization.yaml")).getFirst();
      kustomization.path("images").forEach(i -> tags.add(i.path("newTag").asText()));
      for (JsonNode p : kustomization.path("patches")) {
        if (!p.has("path") || p.has("target")) continue; // a targeted patch names its objects in target
        for (JsonNode d : read(dir.resolve(p.path("path").asText()))) {
          String key = d.path("kind").asText() + "/" + d.path("metadata").path("name").asText();
          assertThat(all).as(k + " patches " + key).containsKey(key);
        }
      }
      for (JsonNode r : kustomization.path("replicas")) {
        assertThat(all.keySet()).as(k + " sets replicas of " + r.path("name").asText())
            .containsAnyOf("Deployment/" + r.path("name").asText(), "StatefulSet/" + r.path("name").asText());
      }
    }
    assertThat(tags).as("one image tag everywhere").hasSize(1);
  }

  /**
   * Each kustomization runs as many routed shard pods as its placement has shards, and lists each of them, in order,
   * to the engines and to the shards themselves (an overlay that changes the pod count patches the config too).
   */
  @Test
  void everyKustomizationAgreesOnTheRoutedShardCount() throws IOException {
    var base = byKindAndName(base());
    for (String k : KUSTOMIZATIONS) {
      Path dir = K8S.resolve(k);
      JsonNode kustomization = read(dir.resolve("kustomization.yaml")).getFirst();
      int pods = base.get("StatefulSet/moemesh-expert-routed").node().path("spec").path("replicas").asInt();
      for (JsonNode r : kustomization.path("replicas")) if (r.path("name").asText().equals("moemesh-expert-routed")) pods = r.path("count").asInt();
      Map<String, String> config = new HashMap<>();
      base.get("ConfigMap/moemesh-config").node().path("data").properties().forEach(e -> config.put(e.getKey(), e.getValue().asText()));
      for (JsonNode p : kustomization.path("patches"))
        if (p.has("path") && !p.has("target"))
          for (JsonNode d : read(dir.resolve(p.path("path").asText())))
            if (d.path("kind").asText().equals("ConfigMap")) d.path("data").properties().forEach(e -> config.put(e.getKey(), e.getValue().asText()));
      assertThat(Integer.parseInt(config.get("MOEMESH_EXPERT_NUM_SHARDS"))).as(k + ": the placement's shards").isEqualTo(pods);
      List<String> shards = new ArrayList<>();
      for (int i = 0; i < pods; i++) shards.add("moemesh-expert-routed-" + i + ".moemesh-expert-routed:9501");
      assertThat(config.get("MOEMESH_EXPERTS_SHARDS").split(",")).as(k + ": the engines' shards").containsExactlyElementsOf(shards);
      assertThat(config.get("MOEMESH_EXPERT_PEERS").split(",")).as(k + ": the shards' peers").containsExactlyElementsOf(shards);
      assertThat(config.get("MOEMESH_EXPERTS_REDUNDANT_SLOTS")).as(k).isEqualTo(config.get("MOEMESH_EXPERT_REDUNDANT_SLOTS"));
    }
  }

  @Test
  void everyKustomizationRendersWithKubectl() throws Exception {
    Assumptions.assumeTrue(onPath("kubectl"), "kubectl is not installed");
    for (String k : KUSTOMIZATIONS) {
      Process p = new ProcessBuilder("kubectl", "kustomize", K8S.resolve(k).toString()).redirectErrorStream(true).start();
      String out;
      try (InputStream in = p.getInputStream()) {
        out = new String(in.readAllBytes());
      }
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).as(k + ":\n" + out).isZero();
      assertThat(out).as(k).contains("kind: Deployment", "kind: StatefulSet", "kind: HorizontalPodAutoscaler");
    }
  }

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

  /**
   * deploy/docker/Dockerfile has a target per image the manifests run, copying that module's fast-jar from the one
   * build stage, which builds every such module.
   */
  @Test
  void theDockerfileHasATargetForEveryImage() throws IOException {
    String dockerfile = Files.readString(ROOT.resolve("deploy/docker/Dockerfile"));
    Matcher built = Pattern.compile("-pl ([a-z,-]+) -am package").matcher(dockerfile);
    assertThat(built.find()).as("the build stage's reactor build").isTrue();
    Set<String> modules = Set.of(built.group(1).split(","));
    Map<String, String> targets = new HashMap<>();
    Matcher stage = Pattern.compile("(?m)^FROM runtime AS ([a-z-]+)\\n(COPY [^\\n]+)").matcher(dockerfile);
    while (stage.find()) targets.put(stage.group(1), stage.group(2));
    Set<String> images = new HashSet<>();
    for (Doc w : base().stream().filter(Doc::isWorkload).toList()) for (JsonNode c : w.podSpec().path("containers")) images.add(module(c));
    assertThat(images).hasSize(5);
    for (String image : images) {
      assertThat(modules).as("the build stage builds " + image).contains(image);
      assertThat(targets.get(image)).as("target " + image).isEqualTo(
          "COPY --from=build --chown=185 /src/" + image + "/target/quarkus-app/ /deployments/");
    }
  }

  /**
   * Every environment variable a manifest sets is a configuration key of the service that gets it (a ConfigMap's
   * keys: of some service that reads the ConfigMap), so a renamed key cannot leave a manifest silently ignored.
   */
  @Test
  void everyEnvironmentVariableIsAConfigKeyOfItsService() throws Exception {
    List<JsonNode> workloads = new ArrayList<>();
    base().stream().filter(Doc::isWorkload).forEach(d -> workloads.add(d.node()));
    if (onPath("kubectl"))
      for (String k : List.of("overlays/local", "overlays/ascend"))
        rendered(K8S.resolve(k)).stream().filter(d -> d.path("kind").asText().matches("Deployment|StatefulSet")).forEach(workloads::add);
    Map<String, Set<String>> envByModule = new HashMap<>();
    Set<String> configMapReaders = new HashSet<>();
    int checked = 0;
    for (JsonNode w : workloads) {
      JsonNode pod = w.path("spec").path("template").path("spec");
      for (String list : List.of("initContainers", "containers"))
        for (JsonNode c : pod.path(list)) {
          Set<String> env = envByModule.computeIfAbsent(module(c), m -> new HashSet<>());
          if (c.has("command")) continue; // a CLI run (the demo model's init container), not the service
          for (JsonNode e : c.path("env")) env.add(e.path("name").asText());
          if (c.path("envFrom").toString().contains("moemesh-config")) configMapReaders.add(module(c));
        }
    }
    String dockerfile = Files.readString(ROOT.resolve("deploy/docker/Dockerfile"));
    Map<String, Set<String>> envNames = new HashMap<>();
    for (String module : envByModule.keySet()) {
      Set<String> names = new HashSet<>();
      for (String key : ConfigKeys.of(module)) names.add(ConfigKeys.envName(key));
      envNames.put(module, names);
    }
    for (var e : envByModule.entrySet())
      for (String name : e.getValue()) {
        if (name.equals("JAVA_OPTS_APPEND")) {
          assertThat(dockerfile).as("the image's entry point reads JAVA_OPTS_APPEND").contains("$JAVA_OPTS_APPEND");
          continue;
        }
        assertThat(envNames.get(e.getKey())).as(e.getKey() + " reads " + name).contains(name);
        checked++;
      }
    for (var data : byKindAndName(base()).get("ConfigMap/moemesh-config").node().path("data").properties()) {
      assertThat(configMapReaders).as(data.getKey() + ": a service that reads it")
          .anyMatch(m -> envNames.get(m).contains(data.getKey()));
      checked++;
    }
    assertThat(checked).isGreaterThan(30);
  }

  /** The check above is not vacuous: a misspelt or a foreign key is no key of the service. */
  @Test
  void configKeysComeFromTheServicesCode() throws Exception {
    Set<String> decode = ConfigKeys.of("decode-svc"), gateway = ConfigKeys.of("gateway");
    assertThat(decode).contains("moemesh.engine.kv-cache-memory", "moemesh.experts.shared-address", "moemesh.decode.kv-stores",
        "moemesh.mesh.key-file", "otel.exporter.otlp.endpoint");
    assertThat(gateway).contains("moemesh.gateway.prefix-routing.block-tokens", "moemesh.gateway.api-keys")
        .doesNotContain("moemesh.engine.kv-cache-memory");
    assertThat(ConfigKeys.envName("moemesh.gateway.max-queue-wait")).isEqualTo("MOEMESH_GATEWAY_MAX_QUEUE_WAIT");
    assertThat(decode.stream().map(ConfigKeys::envName)).doesNotContain("MOEMESH_ENGINE_KV_CACHE_MEMRY", "MOEMESH_GATEWAY_API_KEYS");
  }

  /** {@code kubectl kustomize dir}, parsed. */
  static List<JsonNode> rendered(Path dir) throws Exception {
    Process p = new ProcessBuilder("kubectl", "kustomize", dir.toString()).redirectErrorStream(true).start();
    String out;
    try (InputStream in = p.getInputStream()) {
      out = new String(in.readAllBytes());
    }
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(dir + ":\n" + out).isZero();
    List<JsonNode> docs = new ArrayList<>();
    try (MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(out)) {
      while (it.hasNext()) docs.add(it.next());
    }
    return docs;
  }

  /** The module an image is built from: {@code moemesh/decode-svc:0.1.0} → {@code decode-svc}. */
  static String module(JsonNode container) {
    String image = container.path("image").asText();
    String name = image.substring(image.indexOf('/') + 1);
    return name.contains(":") ? name.substring(0, name.indexOf(':')) : name;
  }

  /** The HTTP and gRPC ports a module's application.properties sets (or those planned for a module to come). */
  static List<Integer> configuredPorts(String module) throws IOException {
    assertThat(ROOT.resolve(module).resolve("pom.xml")).as("image of a module").exists();
    Path file = ROOT.resolve(module).resolve("src/main/resources/application.properties");
    if (!Files.exists(file)) {
      assertThat(PLANNED_PORTS).as("ports of " + module).containsKey(module);
      return PLANNED_PORTS.get(module);
    }
    var props = new Properties();
    try (var in = Files.newInputStream(file)) {
      props.load(in);
    }
    List<Integer> ports = new ArrayList<>();
    ports.add(Integer.parseInt(props.getProperty("quarkus.http.port")));
    String grpc = props.getProperty("quarkus.grpc.server.port");
    if (grpc != null && !props.getProperty("quarkus.grpc.server.use-separate-server", "true").equals("false")) {
      ports.add(Integer.parseInt(grpc));
    }
    return ports;
  }

  /** The container's ports, or only the one of that name. */
  static List<Integer> containerPorts(JsonNode container, String name) {
    List<Integer> out = new ArrayList<>();
    for (JsonNode p : container.path("ports")) if (name == null || name.equals(p.path("name").asText())) out.add(p.path("containerPort").asInt());
    return out;
  }

  static Doc selected(List<Doc> workloads, JsonNode selector, Doc by) {
    List<Doc> hits = workloads.stream().filter(w -> selects(selector, w.podLabels())).toList();
    assertThat(hits).as(by.kind() + "/" + by.name() + " selects exactly one workload's pods").hasSize(1);
    return hits.getFirst();
  }

  static boolean onPath(String command) {
    String path = System.getenv("PATH");
    if (path == null) return false;
    for (String dir : path.split(":")) if (Files.isExecutable(Path.of(dir, command))) return true;
    return false;
  }
}
