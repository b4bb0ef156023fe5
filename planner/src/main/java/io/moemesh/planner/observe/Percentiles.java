package io.moemesh.planner.observe;

import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * p50, p90 and p99 of a latency over one interval, in seconds; NaN when nothing was recorded in it.
 *
 * @param count the observations in the interval
 */
public record Percentiles(double p50, double p90, double p99, double count) {
  public static final Percentiles NONE = new Percentiles(Double.NaN, Double.NaN, Double.NaN, 0);

  /** The named quantile: 0.5, 0.9 or 0.99. */
  public double at(double quantile) {
    if (quantile == 0.5) return p50;
    if (quantile == 0.9) return p90;
    if (quantile == 0.99) return p99;
    throw new IllegalArgumentException("quantile " + quantile + " is not one of 0.5, 0.9, 0.99");
  }

  /** From cumulative bucket counts of the interval (the difference of two scrapes' buckets). */
  public static Percentiles of(NavigableMap<Double, Double> intervalBuckets) {
    double count = intervalBuckets.isEmpty() ? 0 : intervalBuckets.lastEntry().getValue();
    if (!(count > 0)) return NONE;
    return new Percentiles(quantile(0.5, intervalBuckets), quantile(0.9, intervalBuckets), quantile(0.99, intervalBuckets), count);
  }

  /**
   * Prometheus's {@code histogram_quantile}: find the bucket holding rank q·count and interpolate linearly inside it
   * (the first bucket from 0). A rank in the {@code +Inf} bucket answers the highest finite bound.
   */
  static double quantile(double q, NavigableMap<Double, Double> cumulative) {
    double rank = q * cumulative.lastEntry().getValue();
    double lowerBound = 0, countBelow = 0;
    for (var bucket : cumulative.entrySet()) {
      double upperBound = bucket.getKey(), countUpTo = bucket.getValue();
      if (countUpTo >= rank && countUpTo > countBelow) {
        if (upperBound == Double.POSITIVE_INFINITY) return lowerBound;
        return lowerBound + (upperBound - lowerBound) * (rank - countBelow) / (countUpTo - countBelow);
      }
      lowerBound = upperBound;
      countBelow = countUpTo;
    }
    return lowerBound;
  }

  /** current − previous per bucket, a bucket that went down (the replica restarted) counting from 0. */
  public static NavigableMap<Double, Double> delta(NavigableMap<Double, Double> previous, NavigableMap<Double, Double> current) {
    boolean reset = false;
    for (var e : current.entrySet()) {
      if (e.getValue() < previous.getOrDefault(e.getKey(), 0.0)) reset = true;
    }
    NavigableMap<Double, Double> delta = new TreeMap<>();
    for (var e : current.entrySet()) {
      delta.put(e.getKey(), reset ? e.getValue() : e.getValue() - previous.getOrDefault(e.getKey(), 0.0));
    }
    return delta;
  }
}
