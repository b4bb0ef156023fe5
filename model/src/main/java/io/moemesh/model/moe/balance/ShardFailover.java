package io.moemesh.model.moe.balance;

import io.moemesh.model.moe.Placement;
import java.util.Arrays;

/**
 * Where slots live when routed shards are lost: one pure function from a placement and the shards that answer to
 * the shard hosting each slot ({@link Placement#hostedOn}). The slot maps do not change, so every expert keeps its
 * copies and results stay the same bits; only the shards that compute them do.
 * <pre>
 *   slot whose home shard is live                          → home (a rejoined shard gets its slots back)
 *   slot whose home is lost, hosted on a live shard         → stays there (nothing reloads when another shard changes)
 *   slot whose home is lost, on a lost shard or at home     → the live shard hosting the fewest slots (lowest id on ties)
 * </pre>
 * Worked example (the golden test): 2 shards × 5 slots, shard 1 lost: slots 5-9 move to shard 0, which hosts all 10
 * slots; shard 1 back: every slot home again. 3 shards × 2 slots, shard 2 lost: slot 4 → shard 0, slot 5 → shard 1.
 */
public final class ShardFailover {
  private ShardFailover() {}

  /**
   * @param live [shard] whether it answers; at least one must
   * @return [slot] → the shard that should host it
   */
  public static int[] hosts(Placement placement, boolean[] live) {
    if (live.length != placement.numShards())
      throw new IllegalArgumentException(live.length + " shards' liveness for a placement over " + placement.numShards());
    int[] now = placement.slotToShard(), next = new int[now.length], hosted = new int[live.length];
    boolean any = false;
    for (boolean l : live) any |= l;
    if (!any) throw new IllegalArgumentException("no routed shard is live: the experts have nowhere to go");
    Arrays.fill(next, -1);
    for (int s = 0; s < now.length; s++) {
      int home = placement.homeShard(s);
      if (live[home]) next[s] = home;
      else if (now[s] != home && live[now[s]]) next[s] = now[s];
      if (next[s] >= 0) hosted[next[s]]++;
    }
    for (int s = 0; s < now.length; s++) {
      if (next[s] >= 0) continue;
      int best = -1;
      for (int shard = 0; shard < live.length; shard++) if (live[shard] && (best < 0 || hosted[shard] < hosted[best])) best = shard;
      next[s] = best;
      hosted[best]++;
    }
    return next;
  }

  /** Whether every slot of {@code placement} lives on a shard that answers. */
  public static boolean hostsOnlyLiveShards(Placement placement, boolean[] live) {
    for (int host : placement.slotToShard()) if (!live[host]) return false;
    return true;
  }
}
