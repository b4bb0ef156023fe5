package io.moemesh.model.moe;

/**
 * Which experts a process loads: all of them (one process serves the whole model), none of the routed ones
 * (attention next to remote routed shards), a routed shard's slots, or only the shared experts.
 */
public interface ExpertSelection {
  ExpertSelection ALL = of(true, true);
  /** Attention with remote routed experts and local shared experts. */
  ExpertSelection SHARED_ONLY = of(false, true);
  /** Attention with every expert remote. */
  ExpertSelection NONE = of(false, false);

  boolean routed(int layerId, int expert);

  boolean shared(int layerId);

  private static ExpertSelection of(boolean routed, boolean shared) {
    return new ExpertSelection() {
      @Override
      public boolean routed(int layerId, int expert) {
        return routed;
      }

      @Override
      public boolean shared(int layerId) {
        return shared;
      }
    };
  }

  /** The routed experts {@code shard} holds under {@code placement}; no shared experts. */
  static ExpertSelection shard(Placement placement, int shard) {
    if (shard < 0 || shard >= placement.numShards())
      throw new IllegalArgumentException("shard " + shard + " is not in [0, " + placement.numShards() + ")");
    return new ExpertSelection() {
      @Override
      public boolean routed(int layerId, int expert) {
        if (!placement.isMoeLayer(layerId)) return false;
        for (int s : placement.slotsOf(layerId, expert)) if (placement.shardOf(s) == shard) return true;
        return false;
      }

      @Override
      public boolean shared(int layerId) {
        return false;
      }
    };
  }
}
