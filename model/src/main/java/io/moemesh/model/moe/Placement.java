package io.moemesh.model.moe;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Where the routed experts live: per MoE layer, {@code numShards × slotsPerShard} physical slots, each holding
 * one logical expert; a hot expert may hold several slots (redundant copies, as DeepSeek's EPLB places them).
 * Slot {@code s} belongs to shard {@code s / slotsPerShard} (its home) and lives there, unless that shard was lost:
 * then {@code slotToShard} hosts it on a live shard ({@link io.moemesh.model.moe.balance.ShardFailover}), the same
 * slot in every layer. Immutable; a new placement carries a higher {@code version}. Layers are indexed by
 * {@code layerId}; dense layers have no entry.
 */
public final class Placement {
  private final long version;
  private final int numShards;
  private final int slotsPerShard;
  private final int numExperts;
  private final int[][] physicalToLogical;   // [layerId][slot] → expert; null for dense layers
  private final int[][][] logicalToPhysical; // [layerId][expert] → slots, ascending; null for dense layers
  private final int[] slotToShard;           // [slot] → the shard hosting it in every layer; home: slot / slotsPerShard

  private Placement(long version, int numShards, int numExperts, int[][] physicalToLogical, int[] slotToShard) {
    this.version = version;
    this.numShards = numShards;
    this.numExperts = numExperts;
    this.physicalToLogical = physicalToLogical;
    int slots = -1;
    this.logicalToPhysical = new int[physicalToLogical.length][][];
    for (int layer = 0; layer < physicalToLogical.length; layer++) {
      int[] map = physicalToLogical[layer];
      if (map == null) continue;
      if (slots >= 0 && map.length != slots)
        throw new IllegalArgumentException("layer " + layer + " has " + map.length + " slots, other layers " + slots);
      slots = map.length;
      logicalToPhysical[layer] = invert(layer, map, numExperts);
    }
    if (slots < 0) throw new IllegalArgumentException("a placement needs at least one MoE layer");
    if (numShards < 1 || slots % numShards != 0)
      throw new IllegalArgumentException(slots + " slots per layer do not split evenly over " + numShards + " shards");
    this.slotsPerShard = slots / numShards;
    if (slotToShard == null) {
      slotToShard = new int[slots];
      for (int s = 0; s < slots; s++) slotToShard[s] = s / slotsPerShard;
    }
    if (slotToShard.length != slots)
      throw new IllegalArgumentException(slotToShard.length + " slot hosts for " + slots + " slots per layer");
    for (int s = 0; s < slots; s++)
      if (slotToShard[s] < 0 || slotToShard[s] >= numShards)
        throw new IllegalArgumentException("slot " + s + " is hosted on shard " + slotToShard[s] + ", not in [0, " + numShards + ")");
    this.slotToShard = slotToShard;
  }

  /**
   * A placement from its slot map. Every expert of every MoE layer must hold at least one slot.
   *
   * @param physicalToLogical [layerId][slot] → expert, null for dense layers; all MoE layers equally many slots
   */
  public static Placement of(long version, int numShards, int numExperts, int[][] physicalToLogical) {
    int[][] copy = new int[physicalToLogical.length][];
    for (int i = 0; i < copy.length; i++) copy[i] = physicalToLogical[i] == null ? null : physicalToLogical[i].clone();
    return new Placement(version, numShards, numExperts, copy, null);
  }

  /** This placement's slot maps with the slots hosted by {@code slotToShard} ([slot] → shard), under {@code newVersion}. */
  public Placement hostedOn(int[] slotToShard, long newVersion) {
    return new Placement(newVersion, numShards, numExperts, physicalToLogical, slotToShard.clone());
  }

  /**
   * The starting placement: expert {@code e} in slot {@code e}, then the redundant slots hold experts
   * {@code 0, 1, …} again (no load is known yet), over {@code numExperts + redundantSlots} slots per layer.
   *
   * @param moeLayers true for each layerId that is a MoE layer
   */
  public static Placement initial(boolean[] moeLayers, int numExperts, int numShards, int redundantSlots) {
    int slots = numExperts + redundantSlots;
    if (redundantSlots < 0 || redundantSlots > numExperts)
      throw new IllegalArgumentException("redundant slots must be in [0, " + numExperts + "], got " + redundantSlots);
    int[][] map = new int[moeLayers.length][];
    for (int layer = 0; layer < map.length; layer++) {
      if (!moeLayers[layer]) continue;
      map[layer] = new int[slots];
      for (int s = 0; s < slots; s++) map[layer][s] = s % numExperts;
    }
    return new Placement(0, numShards, numExperts, map, null);
  }

  private static int[][] invert(int layer, int[] physicalToLogical, int numExperts) {
    List<List<Integer>> slots = new ArrayList<>();
    for (int e = 0; e < numExperts; e++) slots.add(new ArrayList<>());
    for (int s = 0; s < physicalToLogical.length; s++) {
      int e = physicalToLogical[s];
      if (e < 0 || e >= numExperts)
        throw new IllegalArgumentException("layer " + layer + " slot " + s + " holds expert " + e + ", not in [0, " + numExperts + ")");
      slots.get(e).add(s);
    }
    int[][] out = new int[numExperts][];
    for (int e = 0; e < numExperts; e++) {
      if (slots.get(e).isEmpty()) throw new IllegalArgumentException("layer " + layer + " places expert " + e + " in no slot");
      out[e] = slots.get(e).stream().mapToInt(Integer::intValue).toArray();
    }
    return out;
  }

  public long version() {
    return version;
  }

  public int numShards() {
    return numShards;
  }

  public int slotsPerShard() {
    return slotsPerShard;
  }

  public int numSlots() {
    return numShards * slotsPerShard;
  }

  public int numExperts() {
    return numExperts;
  }

  /** Number of layer ids covered (MoE or not). */
  public int numLayers() {
    return physicalToLogical.length;
  }

  public boolean isMoeLayer(int layerId) {
    return layerId >= 0 && layerId < physicalToLogical.length && physicalToLogical[layerId] != null;
  }

  /** The shard that hosts {@code slot} (its home shard unless that one was lost). */
  public int shardOf(int slot) {
    return slotToShard[slot];
  }

  /** The shard {@code slot} belongs to when every shard is live: {@code slot / slotsPerShard}. */
  public int homeShard(int slot) {
    return slot / slotsPerShard;
  }

  /** Which shard hosts each slot, [slot] → shard (a copy). */
  public int[] slotToShard() {
    return slotToShard.clone();
  }

  /** Whether every slot lives on its home shard. */
  public boolean isHome() {
    for (int s = 0; s < slotToShard.length; s++) if (slotToShard[s] != homeShard(s)) return false;
    return true;
  }

  /** The expert held in {@code slot} of {@code layerId}. */
  public int expertAt(int layerId, int slot) {
    return moeLayer(layerId)[slot];
  }

  /** The slots holding {@code expert} in {@code layerId}, ascending (a copy). */
  public int[] slotsOf(int layerId, int expert) {
    return logicalToPhysical[checked(layerId)][expert].clone();
  }

  /** Number of copies of {@code expert} in {@code layerId}. */
  public int replicas(int layerId, int expert) {
    return logicalToPhysical[checked(layerId)][expert].length;
  }

  /** The {@code i}-th slot of {@code expert} in {@code layerId}. */
  public int slot(int layerId, int expert, int i) {
    return logicalToPhysical[checked(layerId)][expert][i];
  }

  /** The distinct experts {@code shard} holds in {@code layerId}, ascending. */
  public int[] expertsOnShard(int layerId, int shard) {
    int[] map = moeLayer(layerId);
    return java.util.stream.IntStream.range(0, map.length).filter(s -> slotToShard[s] == shard).map(s -> map[s]).distinct().sorted().toArray();
  }

  /** The slot map of {@code layerId} (a copy). */
  public int[] physicalToLogical(int layerId) {
    return moeLayer(layerId).clone();
  }

  /** This placement's slot maps under a new version number. */
  public Placement withVersion(long newVersion) {
    return new Placement(newVersion, numShards, numExperts, physicalToLogical, slotToShard);
  }

  private int[] moeLayer(int layerId) {
    return physicalToLogical[checked(layerId)];
  }

  private int checked(int layerId) {
    if (!isMoeLayer(layerId)) throw new IllegalArgumentException("layer " + layerId + " is not a MoE layer of this placement");
    return layerId;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Placement p && p.version == version && p.numShards == numShards && p.numExperts == numExperts
        && Arrays.deepEquals(p.physicalToLogical, physicalToLogical) && Arrays.equals(p.slotToShard, slotToShard);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(version) * 31 + Arrays.deepHashCode(physicalToLogical);
  }

  @Override
  public String toString() {
    return "Placement{version=" + version + ", shards=" + numShards + ", slotsPerShard=" + slotsPerShard + ", experts=" + numExperts
        + (isHome() ? "" : ", hosted " + Arrays.toString(slotToShard)) + "}";
  }
}
