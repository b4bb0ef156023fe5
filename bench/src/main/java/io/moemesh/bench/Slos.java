package io.moemesh.bench;

import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Service-level objectives for goodput, as vLLM's {@code --goodput ttft:500 tpot:50}: milliseconds per named figure.
 * A request is good when it completed and meets every named one (each figure at most its bound); goodput is the good
 * requests per second. As in vLLM, a request with a single output token has no TPOT and meets any TPOT bound.
 */
record Slos(Map<Metric, Double> millis) {
  static final Slos NONE = new Slos(Map.of());

  /** The figures an SLO can bound, by vLLM's names. */
  enum Metric {
    TTFT, TPOT, E2EL;

    String key() {
      return name().toLowerCase(Locale.ROOT);
    }

    double seconds(RequestResult r) {
      return switch (this) {
        case TTFT -> r.ttftSeconds();
        case TPOT -> r.outputTokens() > 1 ? r.tpotSeconds() : 0;
        case E2EL -> r.latencySeconds();
      };
    }
  }

  Slos {
    var copy = new EnumMap<Metric, Double>(Metric.class);
    copy.putAll(millis);
    millis = Collections.unmodifiableMap(copy);
  }

  boolean isEmpty() {
    return millis.isEmpty();
  }

  /** Completed, and within every bound. */
  boolean met(RequestResult r) {
    if (!r.ok()) return false;
    for (var slo : millis.entrySet()) if (slo.getKey().seconds(r) * 1e3 > slo.getValue()) return false;
    return true;
  }

  /** {@code ["ttft:500", "tpot:50"]} (each may also hold several, comma-separated) → the SLOs. */
  static Slos parse(String option, List<String> values) {
    var millis = new EnumMap<Metric, Double>(Metric.class);
    for (String value : values) {
      for (String part : value.split(",", -1)) {
        String slo = part.strip();
        int colon = slo.indexOf(':');
        if (colon < 0) throw new IllegalArgumentException(option + " takes NAME:MILLISECONDS pairs (e.g. ttft:500 tpot:50), got '" + slo + "'");
        String name = slo.substring(0, colon).strip().toLowerCase(Locale.ROOT);
        Metric metric = Arrays.stream(Metric.values()).filter(m -> m.key().equals(name)).findFirst()
            .orElseThrow(() -> new IllegalArgumentException(option + ": unknown figure '" + name + "' in '" + slo + "' (ttft, tpot or e2el)"));
        double ms;
        try {
          ms = Double.parseDouble(slo.substring(colon + 1).strip());
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(option + ": '" + slo + "' needs a number of milliseconds after the colon");
        }
        if (!(ms > 0) || Double.isInfinite(ms)) throw new IllegalArgumentException(option + ": the bound in '" + slo + "' must be a finite number of ms > 0");
        if (millis.put(metric, ms) != null) throw new IllegalArgumentException(option + " bounds " + metric.key() + " twice");
      }
    }
    return new Slos(millis);
  }

  /** {@code ttft ≤ 500 ms, tpot ≤ 50 ms}. */
  @Override
  public String toString() {
    return millis.entrySet().stream().map(e -> e.getKey().key() + " ≤ " + RatePhase.trim(e.getValue()) + " ms").collect(Collectors.joining(", "));
  }
}
