package io.moemesh.planner.observe;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Parses Prometheus text exposition format 0.0.4, as Micrometer writes {@code /q/metrics}: comment lines, then
 * {@code name{label="value",...} value [timestamp]}. Label values may hold {@code \\}, {@code \"} and {@code \n}
 * escapes; a trailing comma inside the braces is accepted (simpleclient writes one). Anything else is refused with the
 * line number, since the text comes from a replica over the network.
 */
public final class PrometheusText {
  private PrometheusText() {}

  public static List<Sample> parse(String text) {
    List<Sample> samples = new ArrayList<>();
    String[] lines = text.split("\n", -1);
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i].strip();
      if (line.isEmpty() || line.startsWith("#")) continue;
      samples.add(parseLine(line, i + 1));
    }
    return samples;
  }

  private static Sample parseLine(String line, int lineNumber) {
    int pos = 0;
    while (pos < line.length() && isNameChar(line.charAt(pos), pos == 0)) pos++;
    if (pos == 0) throw new MetricsFormatException(lineNumber, "no metric name", line);
    String name = line.substring(0, pos);
    Map<String, String> labels = new LinkedHashMap<>();
    if (pos < line.length() && line.charAt(pos) == '{') pos = parseLabels(line, pos + 1, labels, lineNumber);
    String[] rest = line.substring(pos).strip().split("\\s+");
    if (rest.length < 1 || rest.length > 2 || rest[0].isEmpty()) {
      throw new MetricsFormatException(lineNumber, "expected a value and an optional timestamp", line);
    }
    return new Sample(name, labels, parseValue(rest[0], line, lineNumber));
  }

  /** Reads {@code a="x",b="y"} up to the closing brace; returns the position after it. */
  private static int parseLabels(String line, int pos, Map<String, String> labels, int lineNumber) {
    while (true) {
      if (pos >= line.length()) throw new MetricsFormatException(lineNumber, "unclosed label set", line);
      if (line.charAt(pos) == '}') return pos + 1;
      int nameStart = pos;
      while (pos < line.length() && isNameChar(line.charAt(pos), pos == nameStart) && line.charAt(pos) != ':') pos++;
      if (pos == nameStart || pos + 1 >= line.length() || line.charAt(pos) != '=' || line.charAt(pos + 1) != '"') {
        throw new MetricsFormatException(lineNumber, "expected label=\"value\" at column " + (pos + 1), line);
      }
      String labelName = line.substring(nameStart, pos);
      pos += 2;
      StringBuilder value = new StringBuilder();
      while (true) {
        if (pos >= line.length()) throw new MetricsFormatException(lineNumber, "unterminated label value", line);
        char c = line.charAt(pos++);
        if (c == '"') break;
        if (c == '\\') {
          if (pos >= line.length()) throw new MetricsFormatException(lineNumber, "dangling escape", line);
          char e = line.charAt(pos++);
          value.append(switch (e) {
            case 'n' -> '\n';
            case '\\', '"' -> e;
            default -> throw new MetricsFormatException(lineNumber, "unknown escape \\" + e, line);
          });
        } else {
          value.append(c);
        }
      }
      if (labels.put(labelName, value.toString()) != null) {
        throw new MetricsFormatException(lineNumber, "label " + labelName + " repeated", line);
      }
      if (pos < line.length() && line.charAt(pos) == ',') {
        pos++;
      } else if (pos >= line.length() || line.charAt(pos) != '}') {
        throw new MetricsFormatException(lineNumber, "expected , or } after label " + labelName, line);
      }
    }
  }

  private static double parseValue(String token, String line, int lineNumber) {
    return switch (token) {
      case "+Inf", "Inf" -> Double.POSITIVE_INFINITY;
      case "-Inf" -> Double.NEGATIVE_INFINITY;
      case "NaN" -> Double.NaN;
      default -> {
        try {
          yield Double.parseDouble(token);
        } catch (NumberFormatException e) {
          throw new MetricsFormatException(lineNumber, "value is not a number", line);
        }
      }
    };
  }

  private static boolean isNameChar(char c, boolean first) {
    return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || !first && c >= '0' && c <= '9';
  }
}
