package io.moemesh.bench;

import java.util.Optional;

/**
 * Server-Sent Events, line by line (the WHATWG event-stream rules the OpenAI streams follow): {@code data:} lines
 * (one optional space after the colon) accumulate, joined by {@code \n}; a blank line dispatches the event; lines
 * starting with {@code :} are comments; other fields ({@code event:}, {@code id:}, {@code retry:}) are ignored, as
 * no OpenAI stream needs them. Feed it the lines without their terminators. Not thread-safe: one per stream.
 */
final class SseParser {
  private final StringBuilder data = new StringBuilder();
  private boolean hasData;

  /** The data of the event this line completes, if it completes one that carried data. */
  Optional<String> accept(String line) {
    if (line.isEmpty()) return dispatch();
    if (line.startsWith(":")) return Optional.empty();
    int colon = line.indexOf(':');
    String field = colon < 0 ? line : line.substring(0, colon);
    if (!field.equals("data")) return Optional.empty();
    String value = colon < 0 ? "" : line.substring(colon + 1);
    if (value.startsWith(" ")) value = value.substring(1);
    if (hasData) data.append('\n');
    data.append(value);
    hasData = true;
    return Optional.empty();
  }

  /**
   * The data of an event the stream ended without a blank line after. The standard drops such an event; a
   * benchmark keeps it, so a server that forgets the last blank line still has its usage counted.
   */
  Optional<String> finish() {
    return dispatch();
  }

  private Optional<String> dispatch() {
    if (!hasData) return Optional.empty();
    String event = data.toString();
    data.setLength(0);
    hasData = false;
    return Optional.of(event);
  }
}
