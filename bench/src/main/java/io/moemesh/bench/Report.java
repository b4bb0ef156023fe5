package io.moemesh.bench;

import io.moemesh.kernels.ProfilingKernels;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/** The kernel benchmark's results as a table for humans and as JSON (one object per measurement). */
final class Report {
  /** The targets, as ratios to {@code ratio_to} (benchmarks, not timed tests). */
  static final Map<String, Double> TARGETS = Map.of("gemv_int8", 0.85, "gemv_bf16", 0.80, "gemm_int8", 0.50, "decode", 0.70);

  private Report() {}

  static String table(List<Measurement> results) {
    var sb = new StringBuilder();
    sb.append(String.format(Locale.ROOT, "%-14s %7s %9s %-7s %6s  %-13s  %-11s %s%n",
        "name", "threads", "value", "unit", "ratio", "of", "target", "shape"));
    for (Measurement m : results) {
      Double target = TARGETS.get(m.name());
      String verdict = target == null || m.ratio() == null ? ""
          : String.format(Locale.ROOT, ">= %.2f %s", target, m.ratio() >= target ? "ok" : "LOW");
      sb.append(String.format(Locale.ROOT, "%-14s %7d %9.1f %-7s %6s  %-13s  %-11s %s%n",
          m.name(), m.threads(), m.value(), m.unit(),
          m.ratio() == null ? "-" : String.format(Locale.ROOT, "%.2f", m.ratio()),
          m.ratioTo() == null ? "" : m.ratioTo(), verdict, m.shape()));
    }
    return sb.toString();
  }

  /**
   * A profile of {@code steps} steps that took {@code wallSeconds}: per op, calls and milliseconds per step and the
   * share of the step; the last row is the time outside every kernel call (Java between the calls).
   */
  static String profile(List<ProfilingKernels.OpTime> ops, int steps, double wallSeconds) {
    double stepMs = wallSeconds * 1e3 / steps;
    var sb = new StringBuilder(String.format(Locale.ROOT, "%-52s %10s %9s %6s%n", "op", "calls/step", "ms/step", "share"));
    double inKernels = 0;
    for (var op : ops) {
      double ms = op.nanos() / 1e6 / steps;
      inKernels += ms;
      sb.append(String.format(Locale.ROOT, "%-52s %10.1f %9.3f %5.1f%%%n", op.op(), (double) op.calls() / steps, ms, 100 * ms / stepMs));
    }
    sb.append(String.format(Locale.ROOT, "%-52s %10s %9.3f %5.1f%%%n", "(outside kernel calls)", "", stepMs - inKernels,
        100 * (stepMs - inKernels) / stepMs));
    sb.append(String.format(Locale.ROOT, "%-52s %10s %9.3f%n", "step", "", stepMs));
    return sb.toString();
  }

  static String json(List<Measurement> results) {
    return results.stream().map(Report::json).collect(Collectors.joining(",\n  ", "[\n  ", "\n]\n"));
  }

  private static String json(Measurement m) {
    return String.format(Locale.ROOT,
        "{\"name\": %s, \"threads\": %d, \"value\": %.3f, \"unit\": %s, \"ratio\": %s, \"ratio_to\": %s, \"shape\": %s, \"stat\": %s}",
        quote(m.name()), m.threads(), m.value(), quote(m.unit()),
        m.ratio() == null ? "null" : String.format(Locale.ROOT, "%.4f", m.ratio()),
        m.ratioTo() == null ? "null" : quote(m.ratioTo()), quote(m.shape()), quote(m.stat()));
  }

  static void writeJson(Path file, List<Measurement> results) throws IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) Files.createDirectories(parent);
    Files.writeString(file, json(results));
  }

  static String quote(String s) {
    var sb = new StringBuilder("\"");
    for (char ch : s.toCharArray()) {
      switch (ch) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        default -> {
          if (ch < 0x20) sb.append(String.format(Locale.ROOT, "\\u%04x", (int) ch));
          else sb.append(ch);
        }
      }
    }
    return sb.append('"').toString();
  }
}
