package io.moemesh.planner.observe;

import io.moemesh.metrics.MetricsFormatException;
import io.moemesh.metrics.PrometheusText;
import io.moemesh.metrics.Sample;
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

  /** Parses a replica's text; a histogram bucket whose {@code le} is not a number is refused here, not later. */
  public static Scrape of(String replica, Instant at, String prometheusText) {
    List<Sample> samples = PrometheusText.parse(prometheusText);
    for (Sample s : samples) {
      String le = s.labels().get("le");
      if (le == null || !s.name().endsWith("_bucket")) continue;
      try {
        upperBound(le);
      } catch (NumberFormatException e) {
        throw new MetricsFormatException(s.name() + ": bucket bound le=\"" + le + "\" is not a number");
      }
    }
    return new Scrape(replica, at, samples);
  }

  private static double upperBound(String le) {
    return le.equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(le);
  }

  /** The sum of every finite series named {@code name}; 0 when there is none (a NaN gauge is a loading engine). */
  public double sum(String name) {
    double sum = 0;
    for (Sample s : samples) if (s.name().equals(name) && Double.isFinite(s.value())) sum += s.value();
    return sum;
  }

  /**
   * The cumulative bucket counts of histogram {@code name} (its {@code _bucket} series), by upper bound {@code le}.
   */
  public NavigableMap<Double, Double> buckets(String histogram) {
    String bucketName = histogram + "_bucket";
    NavigableMap<Double, Double> byUpperBound = new TreeMap<>();
    for (Sample s : samples) {
      if (!s.name().equals(bucketName)) continue;
      String le = s.labels().get("le");
      if (le == null) continue;
      byUpperBound.merge(upperBound(le), s.value(), Double::sum);
    }
    return byUpperBound;
  }
}
