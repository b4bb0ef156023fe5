package io.moemesh.e2e;

import static io.moemesh.e2e.K8sManifests.*;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * deploy/k8s holds together without a cluster: every file a kustomization names parses; every Service, ConfigMap,
 * volume claim, autoscaler target and disruption budget points at something that exists; container ports are the
 * ports each service's application.properties sets; every gRPC address in the config names a Service port; every
 * environment variable is a key its service reads; the Dockerfile builds every image; and, where kubectl is
 * installed, every kustomization renders. Security is {@link DeploySecurityTest}'s; the metric names the manifests use
 * are checked against the running services in {@link DeployMetricsMeshTest}.
 */
class DeployManifestsTest {
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
      Set<String> kinds = new HashSet<>();
      rendered(K8S.resolve(k)).forEach(d -> kinds.add(d.path("kind").asText()));
      assertThat(kinds).as(k).contains("Deployment", "StatefulSet", "HorizontalPodAutoscaler");
    }
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

  /** The HTTP and gRPC ports a module's application.properties sets. */
  static List<Integer> configuredPorts(String module) throws IOException {
    assertThat(ROOT.resolve(module).resolve("pom.xml")).as("image of a module").exists();
    Path file = ROOT.resolve(module).resolve("src/main/resources/application.properties");
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

}
