package io.moemesh.expert;

import java.time.Duration;

/**
 * Which routed shards answer, from their heartbeats: a shard is lost after {@code misses} heartbeats in a row that
 * failed (refused, an error, the deadline passed), or once it has answered nothing for {@code silence} while a
 * heartbeat waits on it (a hung process: connections open, nothing answers), and back at its first good answer after
 * that. Every shard starts live, and neither counts until it has answered: a shard still loading its experts as the
 * mesh starts is not lost, unless the placement in use shows it was lost before this view began
 * ({@link #lostBeforeAnswering}). Times are {@code System.nanoTime()} values, given by the caller. Not thread-safe.
 */
final class ShardLiveness {
  enum Change { NONE, LOST, BACK }

  private final int misses;
  private final long silenceNanos;
  private final int[] missed; // [shard] heartbeats missed in a row
  private final boolean[] live;
  private final boolean[] seen; // [shard] it has answered once
  private final long[] lastAnswer; // [shard] when it last answered, once seen

  ShardLiveness(int numShards, int misses) {
    this(numShards, misses, Duration.ofDays(1));
  }

  ShardLiveness(int numShards, int misses, Duration silence) {
    if (misses < 1) throw new IllegalArgumentException("a shard is lost after at least 1 missed heartbeat, got " + misses);
    if (!silence.isPositive()) throw new IllegalArgumentException("a shard is lost after a positive silence, got " + silence);
    this.misses = misses;
    this.silenceNanos = silence.toNanos();
    this.missed = new int[numShards];
    this.live = new boolean[numShards];
    this.seen = new boolean[numShards];
    this.lastAnswer = new long[numShards];
    java.util.Arrays.fill(live, true);
  }

  /** Records one heartbeat of {@code shard}; says whether it was just lost or just came back. */
  Change record(int shard, boolean answered) {
    return record(shard, answered, System.nanoTime());
  }

  /** Records one heartbeat of {@code shard} that ended at {@code at}: answered, or failed. */
  Change record(int shard, boolean answered, long at) {
    if (answered) {
      seen[shard] = true;
      lastAnswer[shard] = at;
      missed[shard] = 0;
      if (live[shard]) return Change.NONE;
      live[shard] = true;
      return Change.BACK;
    }
    if (!seen[shard]) return Change.NONE; // not up yet
    missed[shard]++;
    if (!live[shard] || missed[shard] < misses) return Change.NONE;
    live[shard] = false;
    return Change.LOST;
  }

  /** A heartbeat still waits on {@code shard} at {@code now}: lost once it has answered nothing for the silence bound. */
  Change unanswered(int shard, long now) {
    if (!seen[shard] || !live[shard] || now - lastAnswer[shard] < silenceNanos) return Change.NONE;
    live[shard] = false;
    return Change.LOST;
  }

  /** Seconds since {@code shard} last answered, at {@code now} (NaN if it never did). */
  double silentSeconds(int shard, long now) {
    return seen[shard] ? (now - lastAnswer[shard]) / 1e9 : Double.NaN;
  }

  /** Whether {@code shard} has not answered since this view began. */
  boolean neverAnswered(int shard) {
    return !seen[shard];
  }

  /**
   * Counts a shard that has not answered yet as lost: the placement in use hosts its slots elsewhere, so it was lost
   * before this view began (this shard restarted while it was down). It is back at its first answer. Returns whether
   * it counted as live until now.
   */
  boolean lostBeforeAnswering(int shard) {
    if (seen[shard] || !live[shard]) return false;
    live[shard] = false;
    return true;
  }

  /** [shard] whether it counts as live (a copy). */
  boolean[] live() {
    return live.clone();
  }

  int numLive() {
    int n = 0;
    for (boolean l : live) if (l) n++;
    return n;
  }

  boolean allLive() {
    return numLive() == live.length;
  }
}
