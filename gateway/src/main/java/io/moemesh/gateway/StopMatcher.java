package io.moemesh.gateway;

import java.util.List;

/**
 * Finds OpenAI {@code stop} strings in streamed text. Text is released as soon as it can no longer be part of a
 * stop string: a tail that could still begin one is held back, so a stop string split across tokens never leaks.
 * After a match nothing more is released; the stop string itself and everything after it are dropped.
 *
 * <p>Not thread-safe: one instance per choice.
 */
final class StopMatcher {
  private final List<String> stops;
  private final StringBuilder pending = new StringBuilder();
  private boolean stopped;

  StopMatcher(List<String> stops) {
    this.stops = List.copyOf(stops);
  }

  /** Appends generated text; returns what may be sent now (text before the match once a stop string appears). */
  String push(String text) {
    if (stopped) return "";
    if (stops.isEmpty()) return text;
    pending.append(text);
    int at = earliestMatch();
    if (at >= 0) {
      stopped = true;
      String out = pending.substring(0, at);
      pending.setLength(0);
      return out;
    }
    int keep = longestSuffixStartingAStop(pending.toString());
    String out = pending.substring(0, pending.length() - keep);
    pending.delete(0, pending.length() - keep);
    return out;
  }

  /** The generation ended: releases the held-back tail (it did not become a stop string). */
  String flush() {
    String out = stopped ? "" : pending.toString();
    pending.setLength(0);
    return out;
  }

  /** Whether a stop string appeared. */
  boolean stopped() {
    return stopped;
  }

  private int earliestMatch() {
    int best = -1;
    for (String stop : stops) {
      int at = pending.indexOf(stop);
      if (at >= 0 && (best < 0 || at < best)) best = at;
    }
    return best;
  }

  /** Length of the longest suffix of {@code text}, shorter than the stop string, that begins some stop string. */
  private int longestSuffixStartingAStop(String text) {
    int best = 0;
    for (String stop : stops) {
      int max = Math.min(stop.length() - 1, text.length());
      for (int len = max; len > best; len--) {
        if (text.regionMatches(text.length() - len, stop, 0, len)) {
          best = len;
          break;
        }
      }
    }
    return best;
  }
}
