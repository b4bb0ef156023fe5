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
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * deploy/k8s read as the tests of it need it: the base's objects, a kustomization rendered by kubectl, what selects
 * what. (YAML through jackson-dataformat-yaml, which jinjava brings onto the classpath.)
 */
final class K8sManifests {
  static final Path ROOT = ServiceProcess.ROOT.toAbsolutePath().normalize();
  static final Path K8S = ROOT.resolve("deploy/k8s");
  static final YAMLMapper YAML = new YAMLMapper();
  static final List<String> KUSTOMIZATIONS = List.of("base", "overlays/local", "overlays/ascend");

  private K8sManifests() {}

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
