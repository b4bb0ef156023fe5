package io.moemesh.planner.observe;

import java.time.Instant;
import java.util.List;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * One replica's {@code /q/metrics} read at one instant. Sums run over every series of a name (every {@code model_name},
 * every {@code finished_reason}), since the planner sizes replicas, not models.
 *
 * @param replica the replica's address, which pairs this scrape with the previous one of the same replica
 */
public record Scrape(String replica, Instant at, List<Sample> samples) {
  public Scrape {
    samples = List.copyOf(samples);
  }

  public static Scrape of(String replica, Instant at, String prometheusText) {
    return new Scrape(replica, at, PrometheusText.parse(prometheusText));
  }

  /** The sum of every finite series named {@code name}; 0 when there is none (a NaN gauge is a loading engine). */
  public double sum(String name) {
    double sum = 0;
    for (Sample s : samples) if (s.name().equals(name) && Double.isFinite(s.value())) sum += s.value();
    return sum;
  }

  /** Whether any finite series is named {@code name}. */
  public boolean has(String name) {
    for (Sample s : samples) if (s.name().equals(name) && Double.isFinite(s.value())) return true;
    return false;
  }

  /** The cumulative bucket counts of histogram {@code name} (its {@code _bucket} series), by upper bound {@code le}. */
  public NavigableMap<Double, Double> buckets(String histogram) {
    String bucketName = histogram + "_bucket";
    NavigableMap<Double, Double> byUpperBound = new TreeMap<>();
    for (Sample s : samples) {
      if (!s.name().equals(bucketName)) continue;
      String le = s.labels().get("le");
      if (le == null) continue;
      double bound = le.equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(le);
      byUpperBound.merge(bound, s.value(), Double::sum);
    }
    return byUpperBound;
  }
}
