package io.moemesh.planner.observe;

import java.util.Map;

/** One line of Prometheus text: a series (name and labels) and its value. */
public record Sample(String name, Map<String, String> labels, double value) {
  public Sample {
    labels = Map.copyOf(labels);
  }
}
