package io.moemesh.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/** {@code bench serve}'s figures as a table for humans and as one JSON object (vLLM's key names). */
final class ServeReport {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ServeReport() {}

  static String table(ServeOptions o, String model, ServeStats s) {
    return table(o, model, s, null);
  }

  /** With {@code speculation} (null: none), the measured requests' draft acceptance on the decode replicas. */
  static String table(ServeOptions o, String model, ServeStats s, SpecDecodeCounts speculation) {
    var sb = new StringBuilder();
    line(sb, "model", model);
    line(sb, "url", o.endpoint().toString());
    line(sb, "load", o.load().describe());
    line(sb, o.load() instanceof Load.ClosedLoop ? "concurrency" : "max in flight", o.concurrency() == ServeOptions.UNLIMITED ? "no cap" : o.concurrency());
    line(sb, "prompts (input / output tokens)", (s.completed() + s.failed()) + " (" + (o.prefixLen() > 0 ? o.prefixLen() + " shared + " : "")
        + o.inputLen() + " / " + o.outputLen() + ")");
    line(sb, "successful requests", s.completed());
    line(sb, "failed requests", s.failed());
    line(sb, "duration (s)", fixed(s.durationSeconds(), 2));
    line(sb, "total input tokens", s.totalInputTokens());
    line(sb, "total output tokens", s.totalOutputTokens());
    line(sb, "request throughput (req/s)", fixed(s.requestThroughput(), 3));
    if (!o.slos().isEmpty()) {
      line(sb, "goodput SLOs", o.slos());
      line(sb, "good requests", s.good());
      line(sb, "request goodput (req/s)", fixed(s.requestGoodput(), 3));
    }
    line(sb, "output token throughput (tok/s)", fixed(s.outputThroughput(), 1));
    line(sb, "total token throughput (tok/s)", fixed(s.totalTokenThroughput(), 1));
    if (speculation != null) {
      line(sb, "spec decode drafts (draft tokens)", fixed(speculation.drafts(), 0) + " (" + fixed(speculation.draftTokens(), 0) + ")");
      line(sb, "spec decode acceptance rate", fixed(speculation.acceptanceRate(), 3));
      line(sb, "spec decode mean acceptance length", fixed(speculation.meanAcceptanceLength(), 2));
    }
    sb.append(String.format(Locale.ROOT, "%n%-8s %6s %10s %10s %10s %10s%n", "ms", "count", "mean", "p50", "p90", "p99"));
    row(sb, "TTFT", s.ttft());
    row(sb, "TPOT", s.tpot());
    row(sb, "ITL", s.itl());
    row(sb, "E2EL", s.e2el());
    return sb.toString();
  }

  /** Per ramp phase: offered, sent, achieved and good rates, the share of its requests that were good, its latencies; "" without phases. */
  static String phaseTable(Timeline t) {
    if (t.phases().isEmpty()) return "";
    String row = "%-6s %7s %7s %7s %8s %6s %9s %9s %9s %8s %8s %8s%n";
    var sb = new StringBuilder(String.format(Locale.ROOT, "%nper phase (req/s; latencies in ms, of the requests sent in the phase)%n"));
    sb.append(String.format(Locale.ROOT, row, "phase", "offered", "sent", "done", "goodput", "good%", "TTFT p50", "TTFT p90", "TTFT p99",
        "TPOT p50", "TPOT p90", "TPOT p99"));
    for (int i = 0; i < t.phases().size(); i++) {
      Timeline.Phase p = t.phases().get(i);
      sb.append(String.format(Locale.ROOT, row, i + 1, fixed(p.phase().rate(), 2), fixed(p.sentRate(), 2), fixed(p.achievedRate(), 2),
          fixed(p.goodput(), 2), p.sent() == 0 ? "-" : fixed(100.0 * p.stats().good() / p.sent(), 0), ms(p.stats().ttft().p50()),
          ms(p.stats().ttft().p90()), ms(p.stats().ttft().p99()), ms(p.stats().tpot().p50()), ms(p.stats().tpot().p90()), ms(p.stats().tpot().p99())));
    }
    return sb.toString();
  }

  private static String ms(double seconds) {
    return Double.isNaN(seconds) ? "-" : fixed(seconds * 1e3, 1);
  }

  private static void line(StringBuilder sb, String name, Object value) {
    sb.append(String.format(Locale.ROOT, "%-34s %s%n", name, value));
  }

  private static void row(StringBuilder sb, String name, ServeStats.Summary m) {
    sb.append(String.format(Locale.ROOT, "%-8s %6d %10.2f %10.2f %10.2f %10.2f%n", name, m.count(), m.mean() * 1e3,
        m.p50() * 1e3, m.p90() * 1e3, m.p99() * 1e3));
  }

  private static String fixed(double v, int decimals) {
    return String.format(Locale.ROOT, "%." + decimals + "f", v);
  }

  static ObjectNode json(ServeOptions o, String model, ServeStats s, List<String> errors) {
    return json(o, model, s, errors, null);
  }

  static ObjectNode json(ServeOptions o, String model, ServeStats s, List<String> errors, SpecDecodeCounts speculation) {
    return json(o, model, s, errors, speculation, null, List.of());
  }

  /** With the {@code timeline} (null: none) as {@code phases} and {@code timeline} arrays, and the planner's {@code replicas}. */
  static ObjectNode json(ServeOptions o, String model, ServeStats s, List<String> errors, SpecDecodeCounts speculation, Timeline timeline,
      List<PlannerReplicas.Sample> replicas) {
    ObjectNode root = JSON.createObjectNode()
        .put("date", java.time.Instant.now().toString())
        .put("backend", "openai-completions")
        .put("url", o.endpoint().toString())
        .put("model_id", model)
        .put("load", o.load().describe())
        .put("num_prompts", s.completed() + s.failed())
        .put("input_len", o.inputLen())
        .put("prefix_len", o.prefixLen())
        .put("output_len", o.outputLen())
        .put("seed", o.seed())
        .put("completed", s.completed())
        .put("failed", s.failed())
        .put("duration", s.durationSeconds())
        .put("total_input_tokens", s.totalInputTokens())
        .put("total_output_tokens", s.totalOutputTokens())
        .put("request_throughput", s.requestThroughput())
        .put("output_throughput", s.outputThroughput())
        .put("total_token_throughput", s.totalTokenThroughput());
    if (o.concurrency() == ServeOptions.UNLIMITED) root.putNull("max_concurrency");
    else root.put("max_concurrency", o.concurrency());
    switch (o.load()) {
      case Load.Poisson p -> root.put("request_rate", Double.isInfinite(p.rate()) ? "inf" : Double.toString(p.rate()));
      case Load.Ramp r -> {
        var phases = root.putArray("ramp");
        r.phases().forEach(p -> phases.addObject().put("rate", p.rate()).put("seconds", p.seconds()));
      }
      case Load.ClosedLoop c -> { }
    }
    if (!o.slos().isEmpty()) {
      var slos = root.putObject("goodput_slos_ms");
      o.slos().millis().forEach((metric, ms) -> slos.put(metric.key(), ms));
      root.put("good_requests", s.good()).put("request_goodput", s.requestGoodput());
    }
    figure(root, "ttft", s.ttft());
    figure(root, "tpot", s.tpot());
    figure(root, "itl", s.itl());
    figure(root, "e2el", s.e2el());
    if (speculation != null) {
      root.put("spec_decode_num_drafts", speculation.drafts()).put("spec_decode_num_draft_tokens", speculation.draftTokens())
          .put("spec_decode_num_accepted_tokens", speculation.acceptedTokens());
      put(root, "spec_decode_acceptance_rate", speculation.acceptanceRate());
      put(root, "spec_decode_acceptance_length", speculation.meanAcceptanceLength());
    }
    if (timeline != null) ServeReport.timeline(root, timeline);
    if (!replicas.isEmpty()) {
      var r = root.putArray("planner_replicas");
      replicas.forEach(x -> r.addObject().put("t", x.seconds()).put("stage", x.stage()).put("kind", x.kind()).put("replicas", x.replicas()));
    }
    var e = root.putArray("errors");
    errors.forEach(e::add);
    return root;
  }

  private static void timeline(ObjectNode root, Timeline t) {
    var phases = root.putArray("phases");
    for (Timeline.Phase p : t.phases()) {
      ObjectNode n = phases.addObject().put("start", p.startSeconds()).put("seconds", p.phase().seconds()).put("offered_rate", p.phase().rate())
          .put("sent", p.sent()).put("completed", p.completed()).put("good", p.good()).put("sent_good", p.stats().good())
          .put("achieved_rate", p.achievedRate()).put("goodput", p.goodput());
      figure(n, "ttft", p.stats().ttft());
      figure(n, "tpot", p.stats().tpot());
      figure(n, "e2el", p.stats().e2el());
    }
    root.put("window_seconds", t.windowSeconds());
    var windows = root.putArray("timeline");
    for (Timeline.Window w : t.windows()) {
      ObjectNode n = windows.addObject().put("start", w.startSeconds()).put("seconds", w.seconds());
      put(n, "offered_rate", w.offeredRate());
      n.put("sent", w.sent()).put("completed", w.completed()).put("good", w.good()).put("failed", w.failed());
      figure(n, "ttft", w.ttft());
      figure(n, "tpot", w.tpot());
    }
  }

  /** {@code mean_ttft_ms}, {@code median_ttft_ms}, {@code p90_ttft_ms}, {@code p99_ttft_ms}; null for NaN. */
  private static void figure(ObjectNode root, String name, ServeStats.Summary m) {
    put(root, "mean_" + name + "_ms", m.mean() * 1e3);
    put(root, "median_" + name + "_ms", m.p50() * 1e3);
    put(root, "p90_" + name + "_ms", m.p90() * 1e3);
    put(root, "p99_" + name + "_ms", m.p99() * 1e3);
  }

  private static void put(ObjectNode root, String key, double value) {
    if (Double.isNaN(value)) root.putNull(key);
    else root.put(key, value);
  }

  static void writeJson(Path file, ObjectNode json) throws IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) Files.createDirectories(parent);
    Files.writeString(file, JSON.writerWithDefaultPrettyPrinter().writeValueAsString(json) + "\n");
  }
}
