package io.moemesh.e2e;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Greedy shrinking of a failing request, so a failure reads small: drop a header, drop a top-level member of a JSON
 * object body, halve a long header value or a body that is not a JSON object. A step is kept while the smaller request
 * still fails the same way; the target is left alone (shortening it could reach another route). Bounded in sends and
 * time, since a hung case costs the whole answer deadline each time.
 */
final class Shrink {
  private Shrink() {}

  private static final int MAX_SENDS = 200;
  private static final long MAX_NANOS = 60_000_000_000L;

  record Result(RawHttp.Request request, Fuzz.Verdict verdict, int steps) {}

  static Result shrink(RawHttp.Request failing, Fuzz.Verdict verdict, Fuzz.Oracle oracle) {
    long end = System.nanoTime() + MAX_NANOS;
    int sends = 0, steps = 0;
    RawHttp.Request current = failing;
    Fuzz.Verdict currentVerdict = verdict;
    boolean smaller = true;
    while (smaller) {
      smaller = false;
      for (RawHttp.Request candidate : candidates(current)) {
        if (sends++ >= MAX_SENDS || System.nanoTime() > end) return new Result(current, currentVerdict, steps);
        Fuzz.Verdict v = oracle.judge(candidate);
        if (v.sameFailureAs(verdict)) {
          current = candidate;
          currentVerdict = v;
          steps++;
          smaller = true;
          break;
        }
      }
    }
    return new Result(current, currentVerdict, steps);
  }

  /** Smaller variants of {@code r}, the boldest first. */
  static List<RawHttp.Request> candidates(RawHttp.Request r) {
    List<RawHttp.Request> out = new ArrayList<>();
    List<Map.Entry<String, String>> headers = r.headers();
    for (int i = 0; i < headers.size(); i++) {
      List<Map.Entry<String, String>> fewer = new ArrayList<>(headers);
      fewer.remove(i);
      out.add(new RawHttp.Request(r.method(), r.target(), fewer, r.body(), r.maySucceed()));
    }
    byte[] body = r.body();
    if (body != null) {
      List<String> members = topLevelMembers(body);
      if (members == null) {
        if (body.length > 1) out.add(withBody(r, Arrays.copyOf(body, body.length / 2)));
      } else {
        for (int i = 0; i < members.size(); i++) {
          List<String> fewer = new ArrayList<>(members);
          fewer.remove(i);
          out.add(withBody(r, FuzzInputs.utf8("{" + String.join(",", fewer) + "}")));
        }
      }
    }
    for (int i = 0; i < headers.size(); i++) {
      String value = headers.get(i).getValue();
      if (value.length() < 8) continue;
      List<Map.Entry<String, String>> shorter = new ArrayList<>(headers);
      shorter.set(i, Map.entry(headers.get(i).getKey(), value.substring(0, value.length() / 2)));
      out.add(new RawHttp.Request(r.method(), r.target(), shorter, r.body(), r.maySucceed()));
    }
    return out;
  }

  private static RawHttp.Request withBody(RawHttp.Request r, byte[] body) {
    return new RawHttp.Request(r.method(), r.target(), r.headers(), body, r.maySucceed());
  }

  /**
   * The members ({@code "name":value} texts) of a body that is a JSON object in UTF-8, split at its top-level commas;
   * null for any other body. A scan of strings and brackets, not a parser: the values may be what parsers refuse.
   */
  static List<String> topLevelMembers(byte[] body) {
    String text = new String(body, StandardCharsets.UTF_8);
    if (!Arrays.equals(FuzzInputs.utf8(text), body) || !text.startsWith("{") || !text.endsWith("}") || text.length() < 3) return null;
    List<String> members = new ArrayList<>();
    int depth = 0, start = 1;
    boolean inString = false;
    for (int i = 1; i < text.length() - 1; i++) {
      char c = text.charAt(i);
      if (inString) {
        if (c == '\\') i++;
        else if (c == '"') inString = false;
      } else if (c == '"') inString = true;
      else if (c == '{' || c == '[') depth++;
      else if (c == '}' || c == ']') depth--;
      else if (c == ',' && depth == 0) {
        members.add(text.substring(start, i));
        start = i + 1;
      }
      if (depth < 0) return null;
    }
    members.add(text.substring(start, text.length() - 1));
    return depth == 0 && !inString ? members : null;
  }
}
