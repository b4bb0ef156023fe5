package io.moemesh.metrics;

/** A {@code /q/metrics} page that is not Prometheus text or OpenMetrics; names the line and what is wrong. */
public final class MetricsFormatException extends RuntimeException {
  public MetricsFormatException(int lineNumber, String problem, String line) {
    super("line " + lineNumber + ": " + problem + ": " + abbreviate(line));
  }

  public MetricsFormatException(String problem) {
    super(problem);
  }

  private static String abbreviate(String line) {
    return line.length() <= 120 ? line : line.substring(0, 120) + "…";
  }
}
