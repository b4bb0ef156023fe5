package io.moemesh.planner.service;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * deploy/k8s/planner holds together with the service: the restricted Pod Security Standard, every
 * {@code MOEMESH_PLANNER_*} variable a key of {@link PlannerConfig} (a misspelt optional one would be ignored
 * silently), the profile mounted where the variable points, the port the service listens on, and — where kubectl is
 * installed — the Component renders onto overlays/local without the HPAs it replaces.
 */
class PlannerManifestsTest {
  static final Path DIR = Path.of("..", "deploy", "k8s", "planner");

  static List<JsonNode> read(Path file) throws IOException {
    List<JsonNode> docs = new ArrayList<>();
    try (var it = new YAMLMapper().readerFor(JsonNode.class).<JsonNode>readValues(file.toFile())) {
      while (it.hasNext()) {
        JsonNode d = it.next();
        if (d != null && !d.isEmpty()) docs.add(d);
      }
    }
    return docs;
  }

  static JsonNode deployment() throws IOException {
    return read(DIR.resolve("planner.yaml")).stream().filter(d -> d.path("kind").asText().equals("Deployment")).findFirst().orElseThrow();
  }

  @Test
  void thePodIsRestricted() throws IOException {
    JsonNode pod = deployment().path("spec").path("template").path("spec");
    assertThat(pod.path("securityContext").path("runAsNonRoot").asBoolean()).isTrue();
    assertThat(pod.path("securityContext").path("runAsUser").asInt()).isEqualTo(185);
    assertThat(pod.path("securityContext").path("seccompProfile").path("type").asText()).isEqualTo("RuntimeDefault");
    for (JsonNode c : pod.path("containers")) {
      JsonNode sc = c.path("securityContext");
      assertThat(sc.path("allowPrivilegeEscalation").asBoolean(true)).isFalse();
      assertThat(sc.path("readOnlyRootFilesystem").asBoolean()).isTrue();
      assertThat(sc.path("capabilities").path("drop").toString()).isEqualTo("[\"ALL\"]");
    }
    String account = read(DIR.resolve("rbac.yaml")).stream().filter(d -> d.path("kind").asText().equals("ServiceAccount"))
        .findFirst().orElseThrow().path("metadata").path("name").asText();
    assertThat(pod.path("serviceAccountName").asText()).isEqualTo(account);
  }

  @Test
  void everyPlannerVariableIsAConfigKeyAndTheProfileIsWhereItPoints() throws IOException {
    Set<String> variables = new HashSet<>();
    for (String key : keys("moemesh.planner", PlannerConfig.class)) variables.add(key.replace('.', '_').replace('-', '_').toUpperCase());
    JsonNode container = deployment().path("spec").path("template").path("spec").path("containers").get(0);
    String profile = null;
    for (JsonNode env : container.path("env")) {
      String name = env.path("name").asText();
      if (!name.startsWith("MOEMESH_PLANNER_")) continue;
      assertThat(variables).as(name + " is a moemesh.planner key").contains(name);
      if (name.equals("MOEMESH_PLANNER_PROFILE")) profile = env.path("value").asText();
    }
    assertThat(profile).isNotNull();
    Path mounted = Path.of(profile);
    boolean found = false;
    for (JsonNode m : container.path("volumeMounts")) found |= m.path("mountPath").asText().equals(mounted.getParent().toString());
    assertThat(found).as("a volume is mounted at " + mounted.getParent()).isTrue();
    assertThat(DIR.resolve(mounted.getFileName().toString())).as("the ConfigMap's file").exists();

    var properties = new Properties();
    try (var in = PlannerManifestsTest.class.getResourceAsStream("/application.properties")) {
      properties.load(in);
    }
    assertThat(container.path("ports").get(0).path("containerPort").asText()).isEqualTo(properties.getProperty("quarkus.http.port"));
  }

  @Test
  void theComponentRendersOntoTheLocalOverlayWithoutTheHpasItReplaces() throws Exception {
    Assumptions.assumeTrue(onPath("kubectl"), "kubectl is not installed");
    Path dir = Path.of("target", "planner-overlay");
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("kustomization.yaml"), """
        apiVersion: kustomize.config.k8s.io/v1beta1
        kind: Kustomization
        namespace: moemesh  # as an overlay sets it: it names the RoleBinding's ServiceAccount too
        resources: [../../../deploy/k8s/overlays/local]
        components: [../../../deploy/k8s/planner]
        """);
    Path out = dir.resolve("rendered.yaml");
    Process p = new ProcessBuilder("kubectl", "kustomize", dir.toString()).redirectOutput(out.toFile())
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).isZero();
    List<String> hpas = new ArrayList<>();
    JsonNode binding = null;
    for (JsonNode d : read(out)) {
      if (d.path("kind").asText().equals("HorizontalPodAutoscaler")) hpas.add(d.path("metadata").path("name").asText());
      if (d.path("kind").asText().equals("RoleBinding")) binding = d;
    }
    assertThat(hpas).doesNotContain("moemesh-prefill", "moemesh-decode").contains("moemesh-gateway");
    assertThat(binding.path("subjects").get(0).path("namespace").asText()).isEqualTo("moemesh");
  }

  /** moemesh.planner's keys: each method in kebab case, groups (nested interfaces) as a prefix. */
  static List<String> keys(String prefix, Class<?> mapping) {
    List<String> keys = new ArrayList<>();
    for (Method m : mapping.getDeclaredMethods()) {
      if (m.isSynthetic() || m.isDefault() || java.lang.reflect.Modifier.isStatic(m.getModifiers())) continue;
      String key = prefix + "." + m.getName().replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase();
      if (m.getReturnType().isInterface() && m.getReturnType().getEnclosingClass() == PlannerConfig.class) keys.addAll(keys(key, m.getReturnType()));
      else keys.add(key);
    }
    return keys;
  }

  private static boolean onPath(String command) {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
      if (Files.isExecutable(Path.of(dir, command))) return true;
    }
    return false;
  }
}
