package io.moemesh.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Every metric series deploy/k8s names, with the stage whose pods must export it: the autoscalers' custom metrics
 * traced through the prometheus-adapter rule that makes them, the adapter's own series, the KEDA triggers' and the
 * dashboard's queries, and any other {@code vllm:…} or {@code moemesh_…} name in a manifest or document.
 */
final class MetricReferences {
  /** A series that {@code where} names and {@code stage}'s pods must export ({@link #ANY_STAGE}: some stage's). */
  record Reference(String where, String stage, String series) {}

  static final String ANY_STAGE = "any";
  /** A metric name, or vLLM's names as a regex alternation {@code vllm:(a|b)} (as an adapter's seriesQuery writes them). */
  private static final Pattern NAME = Pattern.compile("(vllm:|moemesh_)(\\(([a-z0-9_|]+)\\)|[a-zA-Z0-9_:]+)");
  private static final Pattern STAGE_LABEL = Pattern.compile("stage=\"([a-z-]+)\"");

  private MetricReferences() {}

  static List<Reference> in(Path k8s) throws IOException {
    List<Reference> out = new ArrayList<>();
    List<JsonNode> rules = new ArrayList<>();
    K8sManifests.read(k8s.resolve("monitoring/prometheus-adapter-values.yaml")).getFirst().path("rules").path("custom").forEach(rules::add);
    Set<String> adapterNames = new LinkedHashSet<>(); // the custom metrics API's names: made by the adapter, exported by no pod
    for (JsonNode rule : rules)
      for (String series : names(rule.path("seriesQuery").asText())) {
        out.add(new Reference("adapter seriesQuery " + rule.path("seriesQuery").asText(), ANY_STAGE, series));
        adapterNames.add(adapterName(rule, series));
      }
    for (Path file : files(k8s)) {
      String where = k8s.relativize(file).toString();
      if (file.toString().endsWith(".json")) {
        for (JsonNode expr : new ObjectMapper().readTree(file.toFile()).findValues("expr")) out.addAll(query(where, expr.asText(), ANY_STAGE));
        continue;
      }
      if (file.toString().endsWith(".yaml")) {
        for (JsonNode doc : K8sManifests.read(file)) {
          String kind = doc.path("kind").asText();
          if (kind.equals("HorizontalPodAutoscaler")) out.addAll(autoscaler(where, doc, rules));
          if (kind.equals("ScaledObject"))
            for (JsonNode trigger : doc.path("spec").path("triggers"))
              if (trigger.has("metadata") && trigger.path("metadata").has("query"))
                out.addAll(query(where + " " + doc.path("metadata").path("name").asText(), trigger.path("metadata").path("query").asText(),
                    stage(doc.path("spec").path("scaleTargetRef").path("name").asText())));
        }
      }
      // any other mention, in prose or comments: some stage must export it
      for (String name : names(Files.readString(file))) if (!adapterNames.contains(name)) out.add(new Reference(where, ANY_STAGE, name));
    }
    return out;
  }

  /** An HPA's per-pod custom metrics: the series the adapter rule that names each one reads, from the target's pods. */
  private static List<Reference> autoscaler(String where, JsonNode hpa, List<JsonNode> rules) {
    List<Reference> out = new ArrayList<>();
    String stage = stage(hpa.path("spec").path("scaleTargetRef").path("name").asText());
    for (JsonNode m : hpa.path("spec").path("metrics")) {
      if (!m.path("type").asText().equals("Pods")) continue;
      String metric = m.path("pods").path("metric").path("name").asText();
      String source = null;
      for (JsonNode rule : rules)
        for (String series : names(rule.path("seriesQuery").asText())) if (adapterName(rule, series).equals(metric)) source = series;
      // an autoscaler metric no adapter rule makes: reported as a series no stage exports
      out.add(new Reference(where + " HPA " + hpa.path("metadata").path("name").asText() + " metric " + metric, stage,
          source != null ? source : "(no adapter rule makes " + metric + ")"));
    }
    return out;
  }

  private static List<Reference> query(String where, String promql, String stage) {
    Matcher label = STAGE_LABEL.matcher(promql);
    String s = label.find() ? label.group(1) : stage;
    return names(promql).stream().map(n -> new Reference(where + ": " + promql, s, n)).toList();
  }

  /** The name under which an adapter rule serves {@code series}: its {@code name.matches} replaced by {@code name.as}. */
  static String adapterName(JsonNode rule, String series) {
    Matcher m = Pattern.compile(rule.path("name").path("matches").asText()).matcher(series);
    return m.matches() ? m.replaceAll(rule.path("name").path("as").asText().replace("${", "$").replace("}", "")) : series;
  }

  /** The metric names in a text, alternations expanded. */
  static Set<String> names(String text) {
    Set<String> out = new LinkedHashSet<>();
    Matcher m = NAME.matcher(text);
    while (m.find()) {
      if (m.group(3) != null) for (String alt : m.group(3).split("\\|")) out.add(m.group(1) + alt);
      else out.add(m.group(1) + m.group(2).replaceAll("[_:]+$", ""));
    }
    return out;
  }

  /** {@code moemesh-expert-routed} → {@code expert-routed}. */
  static String stage(String workload) {
    return workload.replaceFirst("^moemesh-", "");
  }

  private static List<Path> files(Path k8s) throws IOException {
    try (Stream<Path> all = Files.walk(k8s)) {
      return all.filter(Files::isRegularFile).filter(f -> f.toString().matches(".*\\.(yaml|json|md)$")).sorted().toList();
    }
  }

  /** The references no stage's export answers, as readable lines; empty when deploy/k8s is honest. */
  static List<String> unanswered(List<Reference> references, Map<String, Set<String>> exportedByStage) {
    List<String> out = new ArrayList<>();
    for (Reference r : references) {
      boolean found = r.stage().equals(ANY_STAGE)
          ? exportedByStage.values().stream().anyMatch(s -> s.contains(r.series()))
          : exportedByStage.getOrDefault(r.stage(), Set.of()).contains(r.series());
      if (!found) out.add(r.series() + " (stage " + r.stage() + ") named by " + r.where());
    }
    return out;
  }
}
