package io.moemesh.metrics;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads the Prometheus text exposition format 0.0.4 and OpenMetrics, as Micrometer writes {@code /q/metrics}: comment
 * lines ({@code # HELP}, {@code # TYPE}, {@code # EOF}), then {@code name{label="value",...} value [timestamp]},
 * OpenMetrics lines optionally followed by an exemplar ({@code # {trace_id="…"} value [timestamp]}), which is not the
 * sample's value and is skipped. Label values may hold {@code \\}, {@code \"} and {@code \n} escapes; a trailing comma
 * inside the braces is accepted (simpleclient writes one). Anything else is refused with the line number, since the
 * text comes from another process over the network.
 */
public final class PrometheusText {
  private PrometheusText() {}

  /** Every sample line of a page, in order. */
  public static List<Sample> parse(String text) {
    List<Sample> samples = new ArrayList<>();
    String[] lines = text.split("\n", -1);
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i].strip();
      if (line.isEmpty() || line.startsWith("#")) continue;
      samples.add(sample(line, i + 1));
    }
    return samples;
  }

  /** One sample line (line number 1 in an error). */
  public static Sample sample(String line) {
    return sample(line.strip(), 1);
  }

  /**
   * A series written as a test or a config names it, {@code name} or {@code name{label="value",…}}, with no value: a
   * {@link Sample} whose value is NaN.
   */
  public static Sample series(String text) {
    var cursor = new Cursor(text.strip(), 1);
    String name = cursor.name();
    Map<String, String> labels = cursor.labels();
    if (!cursor.atEnd()) throw cursor.error("unexpected text after the series");
    return new Sample(name, labels, Double.NaN);
  }

  private static Sample sample(String line, int lineNumber) {
    var cursor = new Cursor(line, lineNumber);
    String name = cursor.name();
    Map<String, String> labels = cursor.labels();
    String rest = line.substring(cursor.pos).strip();
    int exemplar = rest.indexOf(" # ");
    String[] tokens = (exemplar < 0 ? rest : rest.substring(0, exemplar)).strip().split("\\s+");
    if (tokens.length < 1 || tokens.length > 2 || tokens[0].isEmpty()) {
      throw cursor.error("expected a value and an optional timestamp");
    }
    return new Sample(name, labels, cursor.value(tokens[0]));
  }

  /** A position in one line, read left to right. */
  private static final class Cursor {
    private final String line;
    private final int lineNumber;
    private int pos;

    Cursor(String line, int lineNumber) {
      this.line = line;
      this.lineNumber = lineNumber;
    }

    boolean atEnd() {
      return pos == line.length();
    }

    MetricsFormatException error(String problem) {
      return new MetricsFormatException(lineNumber, problem, line);
    }

    String name() {
      while (pos < line.length() && isNameChar(line.charAt(pos), pos == 0)) pos++;
      if (pos == 0) throw error("no metric name");
      return line.substring(0, pos);
    }

    /** {@code {a="x",b="y"}} if the line has a label set here, else no labels. */
    Map<String, String> labels() {
      Map<String, String> labels = new LinkedHashMap<>();
      if (atEnd() || line.charAt(pos) != '{') return labels;
      pos++;
      while (true) {
        if (atEnd()) throw error("unclosed label set");
        if (line.charAt(pos) == '}') {
          pos++;
          return labels;
        }
        String labelName = labelName();
        String value = quoted();
        if (labels.put(labelName, value) != null) throw error("label " + labelName + " repeated");
        if (pos < line.length() && line.charAt(pos) == ',') {
          pos++;
        } else if (atEnd() || line.charAt(pos) != '}') {
          throw error("expected , or } after label " + labelName);
        }
      }
    }

    private String labelName() {
      int start = pos;
      while (pos < line.length() && isNameChar(line.charAt(pos), pos == start) && line.charAt(pos) != ':') pos++;
      if (pos == start || pos + 1 >= line.length() || line.charAt(pos) != '=' || line.charAt(pos + 1) != '"') {
        throw error("expected label=\"value\" at column " + (pos + 1));
      }
      String name = line.substring(start, pos);
      pos += 2;
      return name;
    }

    /** A label value after its opening quote, up to and past the closing one, escapes undone. */
    private String quoted() {
      StringBuilder value = new StringBuilder();
      while (true) {
        if (atEnd()) throw error("unterminated label value");
        char c = line.charAt(pos++);
        if (c == '"') return value.toString();
        if (c != '\\') {
          value.append(c);
          continue;
        }
        if (atEnd()) throw error("dangling escape");
        char e = line.charAt(pos++);
        value.append(switch (e) {
          case 'n' -> '\n';
          case '\\', '"' -> e;
          default -> throw error("unknown escape \\" + e);
        });
      }
    }

    double value(String token) {
      return switch (token) {
        case "+Inf", "Inf" -> Double.POSITIVE_INFINITY;
        case "-Inf" -> Double.NEGATIVE_INFINITY;
        case "NaN" -> Double.NaN;
        default -> {
          try {
            yield Double.parseDouble(token);
          } catch (NumberFormatException e) {
            throw error("value is not a number");
          }
        }
      };
    }
  }

  private static boolean isNameChar(char c, boolean first) {
    return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || !first && c >= '0' && c <= '9';
  }
}
