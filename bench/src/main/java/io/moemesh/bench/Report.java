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
  static final Map<String, Double> TARGETS = Map.of("gemv_int8", 0.85, "gemv_bf16", 0.80, "gemm_int8", 0.50, "decode", 0.75,
      "decode_contended", 0.40);

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
   * A profile of {@code steps} steps that took {@code wallSeconds}: per op, calls and milliseconds per step, the share
   * of the step, and the op's speed of light on this machine (ms per step, the fraction of it the op reaches, and
   * whether memory or arithmetic sets it); the last rows are the time outside every kernel call (Java between the
   * calls) and the step, against the sum of the bounds.
   */
  static String profile(List<ProfilingKernels.OpTime> ops, int steps, double wallSeconds, SpeedOfLight light) {
    double stepMs = wallSeconds * 1e3 / steps;
    String row = "%-52s %10s %9s %6s %9s %8s  %s%n";
    var sb = new StringBuilder(String.format(Locale.ROOT, row, "op", "calls/step", "ms/step", "share", "bound ms", "of bound", "bound by"));
    double inKernels = 0, bounds = 0;
    for (var op : ops) {
      double ms = op.nanos() / 1e6 / steps, bound = light.seconds(op.work()) * 1e3 / steps;
      inKernels += ms;
      bounds += bound;
      sb.append(String.format(Locale.ROOT, row, op.op(), String.format(Locale.ROOT, "%.1f", (double) op.calls() / steps),
          String.format(Locale.ROOT, "%.3f", ms), String.format(Locale.ROOT, "%.1f%%", 100 * ms / stepMs),
          String.format(Locale.ROOT, "%.3f", bound), String.format(Locale.ROOT, "%.0f%%", 100 * bound / ms), light.limit(op.work())));
    }
    double outside = stepMs - inKernels;
    sb.append(String.format(Locale.ROOT, row, "(outside kernel calls)", "", String.format(Locale.ROOT, "%.3f", outside),
        String.format(Locale.ROOT, "%.1f%%", 100 * outside / stepMs), "", "", ""));
    sb.append(String.format(Locale.ROOT, row, "step", "", String.format(Locale.ROOT, "%.3f", stepMs), "",
        String.format(Locale.ROOT, "%.3f", bounds), String.format(Locale.ROOT, "%.0f%%", 100 * bounds / stepMs), ""));
    sb.append(String.format(Locale.ROOT, "bounds at %.1f GB/s (triad), %.0f INT8 GOP/s and %.0f BF16 GOP/s (register-only peaks)%n",
        light.bandwidthGBs(), light.int8Gops(), light.bf16Gops()));
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

  /** Flags of /proc/cpuinfo that decide which kernel path a CPU runs. */
  private static final List<String> ISA_FLAGS = List.of("avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "avx2", "fma", "f16c");

  /** The CPU, its kernel-relevant flags, the cores and the JVM, for the head of every report. */
  static String machine() {
    String cpu = "unknown CPU", flags = "";
    try {
      List<String> info = Files.readAllLines(Path.of("/proc/cpuinfo"));
      cpu = info.stream().filter(l -> l.startsWith("model name")).map(l -> l.substring(l.indexOf(':') + 1).trim()).findFirst().orElse(cpu);
      List<String> has = info.stream().filter(l -> l.startsWith("flags")).findFirst()
          .map(l -> List.of(l.substring(l.indexOf(':') + 1).trim().split(" "))).orElse(List.of());
      flags = " [" + String.join(" ", ISA_FLAGS.stream().filter(has::contains).toList()) + "]";
    } catch (IOException | RuntimeException e) {
      // not Linux: the CPU name is only decoration
    }
    return String.format(Locale.ROOT, "%s%s, %d cores, Java %s", cpu, flags, Runtime.getRuntime().availableProcessors(), Runtime.version());
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
