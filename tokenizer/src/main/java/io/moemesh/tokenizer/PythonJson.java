package io.moemesh.tokenizer;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.filter.AdvancedFilter;
import java.math.BigDecimal;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The {@code tojson} filter as Hugging Face's chat-template environment defines it, i.e. Python's
 * {@code json.dumps(value, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)}: items
 * separated by {@code ", "} and keys by {@code ": "} (Jinjava's own filter writes compact JSON), non-ASCII text
 * unescaped, floats as Python's {@code repr}. Templates that list tools in the prompt depend on these bytes.
 */
final class PythonJson implements AdvancedFilter {

  @Override
  public String getName() {
    return "tojson";
  }

  @Override
  public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
    Object indent = kwargs.containsKey("indent") ? kwargs.get("indent") : args.length > 0 ? args[0] : null;
    String indentUnit = indent instanceof Number n ? " ".repeat(n.intValue()) : indent == null ? null : indent.toString();
    String itemSep = indentUnit == null ? ", " : ",";
    String keySep = ": ";
    if (kwargs.get("separators") instanceof List<?> seps && seps.size() == 2) {
      itemSep = String.valueOf(seps.get(0));
      keySep = String.valueOf(seps.get(1));
    }
    boolean sortKeys = Boolean.TRUE.equals(kwargs.get("sort_keys"));
    StringBuilder out = new StringBuilder();
    new Writer(out, indentUnit, itemSep, keySep, sortKeys).value(var, 0);
    return out.toString();
  }

  /** Serializes like Python's json module. */
  record Writer(StringBuilder out, String indentUnit, String itemSep, String keySep, boolean sortKeys) {
    void value(Object v, int depth) {
      switch (v) {
        case null -> out.append("null");
        case Boolean b -> out.append(b ? "true" : "false");
        case Double d -> out.append(pythonFloat(d));
        case Float f -> out.append(pythonFloat(f.doubleValue()));
        case BigDecimal d -> out.append(pythonFloat(d.doubleValue()));
        case Number n -> out.append(n);
        case Map<?, ?> m -> object(sortKeys ? new TreeMap<>(stringKeys(m)) : stringKeys(m), depth);
        case Iterable<?> it -> array(it, depth);
        case Object[] a -> array(List.of(a), depth);
        default -> string(v.toString());
      }
    }

    private static Map<String, Object> stringKeys(Map<?, ?> m) {
      Map<String, Object> out = new java.util.LinkedHashMap<>();
      m.forEach((k, v) -> out.put(k instanceof Boolean b ? (b ? "true" : "false") : String.valueOf(k), v));
      return out;
    }

    private void object(Map<String, Object> m, int depth) {
      if (m.isEmpty()) {
        out.append("{}");
        return;
      }
      out.append('{');
      boolean first = true;
      for (Map.Entry<String, Object> e : m.entrySet()) {
        if (!first) out.append(itemSep);
        first = false;
        newline(depth + 1);
        string(e.getKey());
        out.append(keySep);
        value(e.getValue(), depth + 1);
      }
      newline(depth);
      out.append('}');
    }

    private void array(Iterable<?> items, int depth) {
      if (!items.iterator().hasNext()) {
        out.append("[]");
        return;
      }
      out.append('[');
      boolean first = true;
      for (Object item : items) {
        if (!first) out.append(itemSep);
        first = false;
        newline(depth + 1);
        value(item, depth + 1);
      }
      newline(depth);
      out.append(']');
    }

    private void newline(int depth) {
      if (indentUnit != null) out.append('\n').append(indentUnit.repeat(depth));
    }

    private void string(String s) {
      out.append('"');
      for (int i = 0; i < s.length(); i++) {
        char c = s.charAt(i);
        switch (c) {
          case '"' -> out.append("\\\"");
          case '\\' -> out.append("\\\\");
          case '\n' -> out.append("\\n");
          case '\r' -> out.append("\\r");
          case '\t' -> out.append("\\t");
          case '\b' -> out.append("\\b");
          case '\f' -> out.append("\\f");
          default -> {
            if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
            else out.append(c);
          }
        }
      }
      out.append('"');
    }
  }

  /** Python's {@code repr(float)}: shortest round-trip digits, exponent form below 1e-4 or from 1e16. */
  static String pythonFloat(double d) {
    if (Double.isNaN(d)) return "NaN";
    if (Double.isInfinite(d)) return d > 0 ? "Infinity" : "-Infinity";
    if (d == 0) return (1 / d < 0) ? "-0.0" : "0.0";
    BigDecimal exact = new BigDecimal(Double.toString(d)).stripTrailingZeros();
    int exponent = exact.precision() - exact.scale() - 1;
    if (exponent >= -4 && exponent < 16) {
      String plain = exact.toPlainString();
      return plain.contains(".") ? plain : plain + ".0";
    }
    String digits = exact.unscaledValue().abs().toString();
    String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
    return (d < 0 ? "-" : "") + mantissa + "e" + (exponent < 0 ? "-" : "+")
        + (Math.abs(exponent) < 10 ? "0" : "") + Math.abs(exponent);
  }
}
