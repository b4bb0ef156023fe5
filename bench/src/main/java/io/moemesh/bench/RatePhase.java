package io.moemesh.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * One phase of a {@code --ramp}: requests arrive as a Poisson process of {@code rate} requests per second for
 * {@code seconds}. A rate of 0 is a pause (no arrivals: the time a planner takes to scale down).
 */
record RatePhase(double rate, double seconds) {
  RatePhase {
    if (!(rate >= 0) || Double.isInfinite(rate)) throw new IllegalArgumentException("a phase's rate must be a finite number ≥ 0, got " + rate);
    if (!(seconds > 0) || Double.isInfinite(seconds)) throw new IllegalArgumentException("a phase must last a finite time > 0 s, got " + seconds);
  }

  /** {@code 2:60,8:120,2:60} → three phases; {@code option} names the flag in the errors. */
  static List<RatePhase> parseAll(String option, String value) {
    List<RatePhase> phases = new ArrayList<>();
    String[] parts = value.split(",", -1);
    for (int i = 0; i < parts.length; i++) {
      String part = parts[i].strip();
      String where = option + " phase " + (i + 1) + " ('" + part + "')";
      int colon = part.indexOf(':');
      if (colon < 0) throw new IllegalArgumentException(where + " must be RATE:SECONDS, e.g. 8:120");
      double rate = number(where + ": the rate", part.substring(0, colon));
      double seconds = number(where + ": the duration", part.substring(colon + 1));
      if (rate < 0 || Double.isInfinite(rate)) throw new IllegalArgumentException(where + ": the rate must be finite and ≥ 0 requests/s");
      if (seconds <= 0 || Double.isInfinite(seconds)) throw new IllegalArgumentException(where + ": the duration must be finite and > 0 s");
      phases.add(new RatePhase(rate, seconds));
    }
    if (phases.stream().allMatch(p -> p.rate() == 0)) throw new IllegalArgumentException(option + " has no phase with a rate above 0");
    return List.copyOf(phases);
  }

  private static double number(String what, String text) {
    try {
      double v = Double.parseDouble(text.strip());
      if (Double.isNaN(v)) throw new NumberFormatException();
      return v;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(what + " must be a number, got '" + text.strip() + "'");
    }
  }

  @Override
  public String toString() {
    return String.format(Locale.ROOT, "%s req/s for %s s", trim(rate), trim(seconds));
  }

  static String trim(double v) {
    return v == Math.rint(v) ? Long.toString((long) v) : String.format(Locale.ROOT, "%.3g", v);
  }
}
