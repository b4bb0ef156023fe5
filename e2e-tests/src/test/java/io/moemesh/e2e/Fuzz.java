package io.moemesh.e2e;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs categories of generated requests against an oracle. Each case's random source is derived from the seed and the
 * case's index alone, so a case is reproduced by itself ({@code -Dfuzz.case=N}). How every case ended is counted for
 * the summary table; the first failing case of a category is shrunk, written out as the exact bytes sent, and fails it.
 */
final class Fuzz {
  /** How one case ended. */
  enum Outcome { PASSED, KNOWN_GAP, FAILED, HUNG }

  /** A case's outcome, the answer's status (0 for none) and, for a failure, what is wrong with the answer. */
  record Verdict(Outcome outcome, int status, String problem) {
    boolean failed() {
      return outcome == Outcome.FAILED || outcome == Outcome.HUNG;
    }

    /** Alike for shrinking: a smaller request must fail the same way, not merely fail. */
    boolean sameFailureAs(Verdict other) {
      return failed() && outcome == other.outcome && status == other.status;
    }
  }

  @FunctionalInterface
  interface Oracle {
    Verdict judge(RawHttp.Request request);
  }

  private static final class Tally {
    final AtomicInteger tried = new AtomicInteger();
    final Map<Outcome, AtomicInteger> outcomes = new ConcurrentHashMap<>();
    final Map<Integer, AtomicInteger> statuses = new ConcurrentHashMap<>();

    void count(Verdict verdict) {
      tried.incrementAndGet();
      outcomes.computeIfAbsent(verdict.outcome(), o -> new AtomicInteger()).incrementAndGet();
      if (verdict.status() > 0) statuses.computeIfAbsent(verdict.status(), s -> new AtomicInteger()).incrementAndGet();
    }

    int count(Outcome outcome) {
      AtomicInteger n = outcomes.get(outcome);
      return n == null ? 0 : n.get();
    }
  }

  private final long seed;
  private final int port;
  private final Oracle oracle;
  private final Map<String, Tally> tallies = new ConcurrentHashMap<>();

  Fuzz(long seed, int port, Oracle oracle) {
    this.seed = seed;
    this.port = port;
    this.oracle = oracle;
  }

  /** Sends {@code cases} generated requests (or only case {@code -Dfuzz.case}); fails on the first failing one. */
  void run(String category, int cases, Gen<RawHttp.Request> requests) {
    Tally tally = tallies.computeIfAbsent(category, c -> new Tally());
    Integer only = Integer.getInteger("fuzz.case");
    for (int index = 0; index < cases; index++) {
      if (only != null && only != index) continue;
      RawHttp.Request request = requests.next(new SplittableRandom(caseSeed(index)));
      Verdict verdict = oracle.judge(request);
      tally.count(verdict);
      if (verdict.failed()) throw failure(category, index, cases, request, verdict);
    }
  }

  /** The seed and the index through SplitMix64's finalizer: neighbouring cases get unrelated random streams. */
  long caseSeed(int index) {
    long z = seed * 0x9E3779B97F4A7C15L + index;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  private AssertionError failure(String category, int index, int cases, RawHttp.Request request, Verdict verdict) {
    Shrink.Result shrunk = Shrink.shrink(request, verdict, oracle);
    String file = category.replaceAll("[^A-Za-z0-9]+", "-") + "-case-" + index;
    Path sent = write(file + ".http", request), smallest = write(file + "-shrunk.http", shrunk.request());
    return new AssertionError(category + ": case " + index + " of " + cases + " failed (seed " + seed
        + "; rerun it alone with -Dfuzz.case=" + index + ")\n" + verdict.problem() + "\nrequest:\n" + request
        + "\n\nshrunk in " + shrunk.steps() + " steps to:\n" + shrunk.request() + "\n" + shrunk.verdict().problem()
        + "\n\nthe exact bytes sent: " + sent.toAbsolutePath() + ", shrunk: " + smallest.toAbsolutePath());
  }

  private Path write(String name, RawHttp.Request request) {
    try {
      Path dir = Files.createDirectories(Path.of("target", "fuzz-failures"));
      return Files.write(dir.resolve(name), request.bytes(port));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The per-category table (cases tried, passed, known gaps, failed, hung) and the statuses seen. */
  String report() {
    StringBuilder s = new StringBuilder("\nGateway fuzz test (seed " + seed + "):\n\n| category | tried | passed (JSON 4xx/503,"
        + " or 2xx where valid) | known gap (empty 400/414/431 before routing) | failed | hung | statuses |\n"
        + "|---|---|---|---|---|---|---|\n");
    int[] total = new int[5];
    for (var e : new TreeMap<>(tallies).entrySet()) {
      Tally t = e.getValue();
      int[] row = {t.tried.get(), t.count(Outcome.PASSED), t.count(Outcome.KNOWN_GAP), t.count(Outcome.FAILED), t.count(Outcome.HUNG)};
      s.append("| ").append(e.getKey());
      for (int i = 0; i < row.length; i++) {
        s.append(" | ").append(row[i]);
        total[i] += row[i];
      }
      s.append(" | ").append(new TreeMap<>(t.statuses)).append(" |\n");
    }
    s.append("| all");
    for (int n : total) s.append(" | ").append(n);
    return s.append(" | |\n").toString();
  }
}
