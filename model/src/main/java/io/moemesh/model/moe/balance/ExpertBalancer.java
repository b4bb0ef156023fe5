package io.moemesh.model.moe.balance;

import io.moemesh.model.moe.Placement;
import java.util.Arrays;

/**
 * The expert-parallel load balancer: one pure function from per-expert token counts to a {@link Placement},
 * as DeepSeek's EPLB (global policy), per MoE layer independently:
 * <ol>
 *   <li><b>replicate</b> — every expert starts with one slot; each redundant slot goes to the expert whose
 *       load per replica, {@code load[e] / replicas[e]}, is highest now (the bottleneck copy is split);
 *   <li><b>pack</b> — each replica carries {@code load[e] / replicas[e]} tokens; heaviest first, a replica goes
 *       to the least-loaded shard that still has a free slot, preferring shards with fewer copies of the same
 *       expert (two copies on one shard do not spread its load over shards), so every shard gets exactly
 *       {@code slotsPerShard} replicas;
 *   <li>within a shard, slots hold its experts in ascending id.
 * </ol>
 * Deterministic: ties go to fewer replicas, then lower expert id; shards tie on fewer slots used, then lower
 * shard id. Loads per replica are compared as doubles of exact integer quotients, so equal ratios tie exactly.
 * Given the previous placement, a layer that would not get better keeps its slots.
 */
public final class ExpertBalancer {
  private ExpertBalancer() {}

  /**
   * The next version of {@code previous} for {@code load}: each layer gets {@link #rebalance(long[][], int, int, long)}'s
   * slots if they lower its busiest shard's load, and keeps its slots otherwise — moving experts costs weight
   * loads on the shards, and greedy packing can lose to a lucky old placement. So the result is never less
   * balanced than {@code previous} on {@code load}, layer by layer.
   */
  public static Placement rebalance(long[][] load, Placement previous) {
    if (load.length != previous.numLayers())
      throw new IllegalArgumentException("load covers " + load.length + " layers, the placement " + previous.numLayers());
    for (int layer = 0; layer < load.length; layer++)
      if ((load[layer] != null) != previous.isMoeLayer(layer))
        throw new IllegalArgumentException("layer " + layer + (load[layer] == null ? " has no load but is" : " has load but is not")
            + " a MoE layer of " + previous);
    Placement fresh = rebalance(load, previous.numShards(), previous.slotsPerShard(), previous.version());
    int[][] physicalToLogical = new int[load.length][];
    for (int layer = 0; layer < load.length; layer++) {
      if (load[layer] == null) continue;
      boolean better = maxShardLoad(load[layer], fresh, layer) < maxShardLoad(load[layer], previous, layer);
      physicalToLogical[layer] = (better ? fresh : previous).physicalToLogical(layer);
    }
    return Placement.of(fresh.version(), fresh.numShards(), fresh.numExperts(), physicalToLogical);
  }

  /**
   * A placement for {@code load} at version {@code previousVersion + 1}.
   *
   * @param load [layerId][expert] tokens over the window; null rows for dense layers; all rows equally long
   * @param slotsPerShard at least {@code ceil(numExperts / numShards)}: every expert needs a slot
   */
  public static Placement rebalance(long[][] load, int numShards, int slotsPerShard, long previousVersion) {
    int numExperts = -1;
    int[][] physicalToLogical = new int[load.length][];
    for (int layer = 0; layer < load.length; layer++) {
      if (load[layer] == null) continue;
      if (numExperts >= 0 && load[layer].length != numExperts)
        throw new IllegalArgumentException("layer " + layer + " has " + load[layer].length + " experts, other layers " + numExperts);
      numExperts = load[layer].length;
      int[] replicas = replicate(load[layer], numShards * slotsPerShard);
      physicalToLogical[layer] = pack(load[layer], replicas, numShards, slotsPerShard);
    }
    return Placement.of(previousVersion + 1, numShards, numExperts, physicalToLogical);
  }

  /**
   * Step 1: how many slots each expert gets out of {@code numSlots}, so that the largest load per replica is
   * minimal ({@code numSlots − numExperts} times, one more copy for the expert with the most tokens per copy).
   *
   * @return replicas[expert] ≥ 1, summing to {@code numSlots}
   */
  public static int[] replicate(long[] load, int numSlots) {
    checkLoad(load);
    if (numSlots < load.length)
      throw new IllegalArgumentException(numSlots + " slots cannot hold " + load.length + " experts");
    int[] replicas = new int[load.length];
    Arrays.fill(replicas, 1);
    for (int r = load.length; r < numSlots; r++) {
      int hottest = 0;
      for (int e = 1; e < load.length; e++) {
        int byLoad = Double.compare(perReplica(load, replicas, e), perReplica(load, replicas, hottest));
        if (byLoad > 0 || byLoad == 0 && replicas[e] < replicas[hottest]) hottest = e;
      }
      replicas[hottest]++;
    }
    return replicas;
  }

  /**
   * Step 2: the slot map of one layer — replicas packed onto shards, heaviest first, each onto the
   * least-loaded shard with room (one without a copy of that expert if any has room).
   *
   * @param replicas [expert] copies, from {@link #replicate}; they must sum to {@code numShards × slotsPerShard}
   * @return physicalToLogical [slot] → expert, slot {@code s} on shard {@code s / slotsPerShard}
   */
  public static int[] pack(long[] load, int[] replicas, int numShards, int slotsPerShard) {
    checkLoad(load);
    int numSlots = numShards * slotsPerShard;
    if (numShards < 1 || slotsPerShard < 1) throw new IllegalArgumentException("need ≥ 1 shard and ≥ 1 slot per shard");
    if (replicas.length != load.length || Arrays.stream(replicas).anyMatch(r -> r < 1) || Arrays.stream(replicas).sum() != numSlots)
      throw new IllegalArgumentException(
          "replicas " + Arrays.toString(replicas) + " do not give each of " + load.length + " experts ≥ 1 of " + numSlots + " slots");
    Integer[] experts = new Integer[load.length];
    for (int e = 0; e < experts.length; e++) experts[e] = e;
    Arrays.sort(experts, (a, b) -> { // heaviest replica first, then expert id: an expert's copies stay together
      int byLoad = Double.compare(perReplica(load, replicas, b), perReplica(load, replicas, a));
      return byLoad != 0 ? byLoad : Integer.compare(a, b);
    });
    double[] shardLoad = new double[numShards];
    int[] used = new int[numShards];
    int[][] copies = new int[numShards][load.length]; // [shard][expert]
    for (int e : experts)
      for (int copy = 0; copy < replicas[e]; copy++) {
        int shard = leastLoadedWithRoom(shardLoad, used, copies, e, slotsPerShard);
        shardLoad[shard] += perReplica(load, replicas, e);
        used[shard]++;
        copies[shard][e]++;
      }
    int[] physicalToLogical = new int[numSlots];
    for (int shard = 0; shard < numShards; shard++)
      for (int e = 0, slot = shard * slotsPerShard; e < load.length; e++) // ascending expert id within the shard
        for (int c = 0; c < copies[shard][e]; c++) physicalToLogical[slot++] = e;
    return physicalToLogical;
  }

  /**
   * Tokens per shard of {@code layerId} if {@code placement} served {@code load}, each expert's tokens spread
   * evenly over its replicas (as {@link ReplicaPicker} spreads them).
   *
   * @param load [expert] tokens of that layer
   * @return [shard] tokens
   */
  public static double[] shardLoads(long[] load, Placement placement, int layerId) {
    if (load.length != placement.numExperts())
      throw new IllegalArgumentException("load has " + load.length + " experts, the placement " + placement.numExperts());
    double[] shardLoad = new double[placement.numShards()];
    for (int slot = 0; slot < placement.numSlots(); slot++) {
      int e = placement.expertAt(layerId, slot);
      shardLoad[placement.shardOf(slot)] += (double) load[e] / placement.replicas(layerId, e);
    }
    return shardLoad;
  }

  /**
   * Balancedness, {@code Σ_layers mean_shard(tokens) / Σ_layers max_shard(tokens)} in (0, 1]: a layer's
   * experts take as long as its busiest shard, so this is the ideal time over the actual time of a forward
   * pass's routed experts (1 = perfectly balanced). 1 when there is no load at all.
   *
   * @param load [layerId][expert] tokens, null rows for dense layers (the placement's MoE layers)
   */
  public static double balancedness(long[][] load, Placement placement) {
    double mean = 0, max = 0;
    for (int layer = 0; layer < load.length; layer++) {
      if (load[layer] == null) continue;
      double[] shardLoad = shardLoads(load[layer], placement, layer);
      mean += Arrays.stream(shardLoad).sum() / shardLoad.length;
      max += Arrays.stream(shardLoad).max().orElseThrow();
    }
    return max == 0 ? 1 : mean / max;
  }

  private static double maxShardLoad(long[] load, Placement placement, int layerId) {
    return Arrays.stream(shardLoads(load, placement, layerId)).max().orElseThrow();
  }

  /** The shard for the next copy of {@code expert}: fewest copies of it, then least load, then fewest slots used. */
  private static int leastLoadedWithRoom(double[] shardLoad, int[] used, int[][] copies, int expert, int slotsPerShard) {
    int best = -1;
    for (int shard = 0; shard < shardLoad.length; shard++) {
      if (used[shard] == slotsPerShard) continue;
      if (best < 0 || isBetter(shard, best, shardLoad, used, copies[shard][expert], copies[best][expert])) best = shard;
    }
    return best;
  }

  private static boolean isBetter(int shard, int best, double[] shardLoad, int[] used, int shardCopies, int bestCopies) {
    if (shardCopies != bestCopies) return shardCopies < bestCopies;
    int byLoad = Double.compare(shardLoad[shard], shardLoad[best]);
    return byLoad != 0 ? byLoad < 0 : used[shard] < used[best];
  }

  private static double perReplica(long[] load, int[] replicas, int expert) {
    return (double) load[expert] / replicas[expert];
  }

  private static void checkLoad(long[] load) {
    if (load.length == 0) throw new IllegalArgumentException("a MoE layer needs at least one expert");
    for (int e = 0; e < load.length; e++)
      if (load[e] < 0) throw new IllegalArgumentException("expert " + e + " has negative load " + load[e]);
  }
}
