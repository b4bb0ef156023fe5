package io.moemesh.bench;

import java.util.Locale;

/** Progress lines on stderr, stamped with the seconds since the run started; stdout stays for the report. */
final class Progress {
  private final long start = System.nanoTime();

  void log(String format, Object... args) {
    System.err.printf(Locale.ROOT, "[%6.1fs] %s%n", (System.nanoTime() - start) / 1e9, String.format(Locale.ROOT, format, args));
  }
}
