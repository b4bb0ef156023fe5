package io.moemesh.metrics;

import java.util.Map;

/** One sample line: a series (name and labels) and its value. */
public record Sample(String name, Map<String, String> labels, double value) {
  public Sample {
    labels = Map.copyOf(labels);
  }

  /** Whether this sample is of {@code series}: the same name, and at least its labels with their values. */
  public boolean isOf(Sample series) {
    return name.equals(series.name) && labels.entrySet().containsAll(series.labels.entrySet());
  }
}
