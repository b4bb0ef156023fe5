package io.moemesh.expert;

/**
 * Which routed shards answer, from their heartbeats: a shard is lost after {@code misses} heartbeats in a row
 * without a good answer, and back at its first good answer after that. Every shard starts live, and misses count only
 * once it has answered: a shard still loading its experts as the mesh starts is not lost, unless the placement in use
 * shows it was lost before this view began ({@link #lostBeforeAnswering}). Not thread-safe.
 */
final class ShardLiveness {
  enum Change { NONE, LOST, BACK }

  private final int misses;
  private final int[] missed; // [shard] heartbeats missed in a row
  private final boolean[] live;
  private final boolean[] seen; // [shard] it has answered once

  ShardLiveness(int numShards, int misses) {
    if (misses < 1) throw new IllegalArgumentException("a shard is lost after at least 1 missed heartbeat, got " + misses);
    this.misses = misses;
    this.missed = new int[numShards];
    this.live = new boolean[numShards];
    this.seen = new boolean[numShards];
    java.util.Arrays.fill(live, true);
  }

  /** Records one heartbeat of {@code shard}; says whether it was just lost or just came back. */
  Change record(int shard, boolean answered) {
    if (answered) {
      seen[shard] = true;
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
