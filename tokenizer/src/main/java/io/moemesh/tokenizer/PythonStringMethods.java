package io.moemesh.tokenizer;

import java.beans.FeatureDescriptor;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.StringJoiner;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

/**
 * Python {@code str} methods for strings in Jinjava templates. Hugging Face chat templates are Python Jinja and call
 * {@code content.split('</think>')[-1]}, {@code .strip()}, {@code .startswith(...)}; Jinjava would otherwise invoke
 * the Java method of the same name, or none: {@code String.split} takes a regex and drops trailing empty strings, so
 * {@code 'a</think>'.split('</think>')[-1]} would give {@code a} instead of Python's empty string.
 *
 * <p>Placed first in the resolver chain; it resolves only method calls on a {@link String} whose name is below, and
 * indexing a string with a number.
 */
final class PythonStringMethods extends ELResolver {

  @Override
  public Object invoke(ELContext context, Object base, Object method, Class<?>[] paramTypes, Object[] params) {
    if (!(base instanceof String s) || !(method instanceof String name)) return null;
    Object[] p = params == null ? new Object[0] : params;
    Object result = call(s, name, p);
    if (result != NOT_HANDLED) context.setPropertyResolved(true);
    return result == NOT_HANDLED ? null : result;
  }

  private static final Object NOT_HANDLED = new Object();

  private static Object call(String s, String name, Object[] p) {
    return switch (name) {
      case "split" -> split(s, arg(p, 0), intArg(p, 1, -1));
      case "rsplit" -> rsplit(s, arg(p, 0), intArg(p, 1, -1));
      case "strip" -> rstrip(lstrip(s, arg(p, 0)), arg(p, 0));
      case "lstrip" -> lstrip(s, arg(p, 0));
      case "rstrip" -> rstrip(s, arg(p, 0));
      case "startswith" -> anyOf(p, s::startsWith);
      case "endswith" -> anyOf(p, s::endsWith);
      case "upper" -> s.toUpperCase(java.util.Locale.ROOT);
      case "lower" -> s.toLowerCase(java.util.Locale.ROOT);
      case "capitalize" -> s.isEmpty() ? s
          : s.substring(0, 1).toUpperCase(java.util.Locale.ROOT) + s.substring(1).toLowerCase(java.util.Locale.ROOT);
      case "title" -> title(s);
      case "replace" -> replace(s, String.valueOf(p[0]), String.valueOf(p[1]), intArg(p, 2, -1));
      case "find" -> s.indexOf(String.valueOf(p[0]));
      case "rfind" -> s.lastIndexOf(String.valueOf(p[0]));
      case "count" -> count(s, String.valueOf(p[0]));
      case "join" -> join(s, p[0]);
      case "splitlines" -> splitLines(s);
      case "isspace" -> !s.isEmpty() && s.chars().allMatch(PythonStringMethods::isSpace);
      case "isdigit" -> !s.isEmpty() && s.chars().allMatch(Character::isDigit);
      case "isalpha" -> !s.isEmpty() && s.chars().allMatch(Character::isLetter);
      case "isalnum" -> !s.isEmpty() && s.chars().allMatch(Character::isLetterOrDigit);
      default -> NOT_HANDLED;
    };
  }

  private static String arg(Object[] p, int i) {
    return i < p.length && p[i] != null ? String.valueOf(p[i]) : null;
  }

  private static int intArg(Object[] p, int i, int fallback) {
    return i < p.length && p[i] instanceof Number n ? n.intValue() : fallback;
  }

  static boolean isSpace(int c) {
    return Character.isWhitespace(c) || Character.isSpaceChar(c) || c == 0x85;
  }

  private static List<String> split(String s, String sep, int maxSplit) {
    List<String> out = new ArrayList<>();
    if (sep == null) { // runs of white space, no empty strings
      int i = 0;
      while (true) {
        while (i < s.length() && isSpace(s.charAt(i))) i++;
        if (i == s.length()) return out;
        if (maxSplit >= 0 && out.size() == maxSplit) {
          out.add(rstrip(s.substring(i), null));
          return out;
        }
        int j = i;
        while (j < s.length() && !isSpace(s.charAt(j))) j++;
        out.add(s.substring(i, j));
        i = j;
      }
    }
    if (sep.isEmpty()) throw new IllegalArgumentException("empty separator");
    int start = 0;
    for (int at; (maxSplit < 0 || out.size() < maxSplit) && (at = s.indexOf(sep, start)) >= 0; ) {
      out.add(s.substring(start, at));
      start = at + sep.length();
    }
    out.add(s.substring(start));
    return out;
  }

  private static List<String> rsplit(String s, String sep, int maxSplit) {
    if (maxSplit < 0 || sep == null) return split(s, sep, maxSplit);
    if (sep.isEmpty()) throw new IllegalArgumentException("empty separator");
    List<String> out = new ArrayList<>();
    int end = s.length();
    for (int at; out.size() < maxSplit && (at = s.lastIndexOf(sep, end - sep.length())) >= 0; ) {
      out.addFirst(s.substring(at + sep.length(), end));
      end = at;
    }
    out.addFirst(s.substring(0, end));
    return out;
  }

  private static List<String> splitLines(String s) {
    List<String> out = new ArrayList<>();
    int start = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if ("\n\r\u000b\u000c\u001c\u001d\u001e\u0085\u2028\u2029".indexOf(c) < 0) continue;
      out.add(s.substring(start, i));
      if (c == '\r' && i + 1 < s.length() && s.charAt(i + 1) == '\n') i++;
      start = i + 1;
    }
    if (start < s.length()) out.add(s.substring(start));
    return out;
  }

  private static boolean strippable(char c, String chars) {
    return chars == null ? isSpace(c) : chars.indexOf(c) >= 0;
  }

  private static String lstrip(String s, String chars) {
    int i = 0;
    while (i < s.length() && strippable(s.charAt(i), chars)) i++;
    return s.substring(i);
  }

  private static String rstrip(String s, String chars) {
    int j = s.length();
    while (j > 0 && strippable(s.charAt(j - 1), chars)) j--;
    return s.substring(0, j);
  }

  private static boolean anyOf(Object[] p, java.util.function.Predicate<String> test) {
    if (p.length > 0 && p[0] instanceof Iterable<?> options) {
      for (Object o : options) if (test.test(String.valueOf(o))) return true;
      return false;
    }
    return p.length > 0 && test.test(String.valueOf(p[0]));
  }

  private static String title(String s) {
    StringBuilder out = new StringBuilder(s.length());
    boolean prevCased = false;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      out.append(prevCased ? Character.toLowerCase(c) : Character.toTitleCase(c));
      prevCased = Character.isLetter(c);
    }
    return out.toString();
  }

  private static String replace(String s, String old, String replacement, int count) {
    if (count < 0) return s.replace(old, replacement);
    StringBuilder out = new StringBuilder();
    int start = 0;
    for (int n = 0, at; n < count && (at = s.indexOf(old, start)) >= 0; n++) {
      out.append(s, start, at).append(replacement);
      start = at + old.length();
      if (old.isEmpty()) {
        if (start < s.length()) out.append(s.charAt(start));
        start++;
      }
    }
    return start > s.length() ? out.toString() : out.append(s.substring(start)).toString();
  }

  private static int count(String s, String sub) {
    if (sub.isEmpty()) return s.length() + 1;
    int n = 0;
    for (int at = s.indexOf(sub); at >= 0; at = s.indexOf(sub, at + sub.length())) n++;
    return n;
  }

  private static String join(String sep, Object items) {
    StringJoiner out = new StringJoiner(sep);
    Iterator<?> it = items instanceof Iterable<?> i ? i.iterator()
        : items instanceof Object[] a ? List.of(a).iterator() : List.of(items).iterator();
    while (it.hasNext()) out.add(String.valueOf(it.next()));
    return out.toString();
  }

  /** Python string indexing, {@code s[0]} and {@code s[-1]} (Jinjava supports only slices); out of range is None. */
  @Override
  public Object getValue(ELContext context, Object base, Object property) {
    if (!(base instanceof String s)) return null;
    Integer index = property instanceof Number n ? Integer.valueOf(n.intValue()) // Jinjava passes "0" for 0
        : property instanceof String p && p.matches("-?\\d{1,9}") ? Integer.valueOf(p) : null;
    if (index == null) return null;
    context.setPropertyResolved(true);
    int i = index < 0 ? s.length() + index : index;
    return i >= 0 && i < s.length() ? String.valueOf(s.charAt(i)) : null;
  }

  // The rest of the resolver contract is left to the next resolvers.

  @Override
  public Class<?> getType(ELContext context, Object base, Object property) {
    return null;
  }

  @Override
  public void setValue(ELContext context, Object base, Object property, Object value) {}

  @Override
  public boolean isReadOnly(ELContext context, Object base, Object property) {
    return true;
  }

  @Override
  public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
    return null;
  }

  @Override
  public Class<?> getCommonPropertyType(ELContext context, Object base) {
    return null;
  }
}
