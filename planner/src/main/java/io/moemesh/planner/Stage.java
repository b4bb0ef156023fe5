package io.moemesh.planner;

import java.util.Locale;

/** A stage the planner sizes on its own: prefill holds the TTFT target, decode the ITL target. */
public enum Stage {
  PREFILL, DECODE;

  /** The lower-case name used in labels, config keys and Deployment names ({@code prefill}, {@code decode}). */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }
}
