package io.moemesh.planner.observe;

/** A replica's {@code /q/metrics} text that is not Prometheus text format; names the line and what is wrong. */
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
