package io.moemesh.bench;

import java.util.Arrays;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * The figures of a serving run, computed as vLLM's {@code benchmarks/serve} computes them: throughputs over the
 * wall-clock duration of the run, counting completed requests only; TTFT, TPOT and end-to-end latency one value
 * per completed request (TPOT only for requests with more than one output token); ITL one value per gap between
 * text chunks, all requests pooled. Percentiles interpolate linearly between order statistics (NumPy's default).
 *
 * Goodput counts the completed requests that meet every {@link Slos SLO} (all completed ones when none are set).
 *
 * @param durationSeconds first request sent → last request ended
 * @param good completed requests within every SLO
 */
record ServeStats(int completed, int failed, double durationSeconds, long totalInputTokens, long totalOutputTokens,
    Summary ttft, Summary tpot, Summary itl, Summary e2el, int good) {

  /** Count, mean and percentiles of one figure, in seconds; NaN where there are no values. */
  record Summary(int count, double mean, double p50, double p90, double p99) {
    static Summary of(double[] values) {
      double[] sorted = values.clone();
      Arrays.sort(sorted);
      return new Summary(sorted.length, Arrays.stream(sorted).average().orElse(Double.NaN),
          percentile(sorted, 50), percentile(sorted, 90), percentile(sorted, 99));
    }
  }

  static ServeStats of(List<RequestResult> results, double durationSeconds) {
    return of(results, durationSeconds, Slos.NONE);
  }

  static ServeStats of(List<RequestResult> results, double durationSeconds, Slos slos) {
    List<RequestResult> ok = results.stream().filter(RequestResult::ok).toList();
    return new ServeStats(ok.size(), results.size() - ok.size(), durationSeconds,
        ok.stream().mapToLong(RequestResult::promptTokens).sum(), ok.stream().mapToLong(RequestResult::outputTokens).sum(),
        summary(ok, RequestResult::ttftSeconds),
        Summary.of(ok.stream().filter(r -> r.outputTokens() > 1).mapToDouble(RequestResult::tpotSeconds).toArray()),
        Summary.of(ok.stream().flatMap(r -> r.itlSeconds().stream()).mapToDouble(Double::doubleValue).toArray()),
        summary(ok, RequestResult::latencySeconds), (int) ok.stream().filter(slos::met).count());
  }

  double requestThroughput() {
    return completed / durationSeconds;
  }

  /** Good requests per second (vLLM's {@code request_goodput}). */
  double requestGoodput() {
    return good / durationSeconds;
  }

  double outputThroughput() {
    return totalOutputTokens / durationSeconds;
  }

  double totalTokenThroughput() {
    return (totalInputTokens + totalOutputTokens) / durationSeconds;
  }

  private static Summary summary(List<RequestResult> ok, ToDoubleFunction<RequestResult> figure) {
    return Summary.of(ok.stream().mapToDouble(figure).toArray());
  }

  /** The {@code q}-th percentile of sorted values, linear between the two nearest ranks; NaN when empty. */
  static double percentile(double[] sorted, double q) {
    if (sorted.length == 0) return Double.NaN;
    double rank = q / 100 * (sorted.length - 1);
    int below = (int) Math.floor(rank);
    int above = Math.min(below + 1, sorted.length - 1);
    return sorted[below] + (rank - below) * (sorted[above] - sorted[below]);
  }
}
