package io.moemesh.model.moe.balance;

import io.moemesh.model.moe.Placement;
import io.moemesh.model.moe.Routing;

/**
 * Which copy of an expert serves a token: round-robin over the expert's tokens in a batch, so each replica of an
 * expert with {@code n} tokens gets {@code ⌊n/r⌋} or {@code ⌈n/r⌉} of them, starting one replica further on at
 * each batch so that small batches (one token per expert in decode) also rotate over the replicas.
 *
 * <p>Any choice gives the same numbers — every replica holds the same weights — so this only moves load; it is
 * deterministic in (placement, layer, expert, position among the expert's tokens, batch sequence number).
 */
public final class ReplicaPicker {
  private ReplicaPicker() {}

  /**
   * The slot serving the {@code indexInExpert}-th token (in row order) routed to {@code expert} in batch
   * {@code batchSeq} (e.g. the engine's step number; any long, the same value gives the same choice).
   */
  public static int slot(Placement placement, int layerId, int expert, int indexInExpert, long batchSeq) {
    int replicas = placement.replicas(layerId, expert);
    return placement.slot(layerId, expert, (int) Math.floorMod(indexInExpert + batchSeq, (long) replicas));
  }

  /**
   * The serving slot of each assignment of {@code routing}, aligned with {@link Routing#tokenRows()}: the
   * {@code i}-th of expert {@code e}'s assignments goes to {@link #slot slot(…, e, i, batchSeq)}.
   */
  public static int[] slots(Placement placement, int layerId, Routing routing, long batchSeq) {
    if (routing.numExperts() != placement.numExperts())
      throw new IllegalArgumentException("routing over " + routing.numExperts() + " experts, placement of " + placement.numExperts());
    int[] offsets = routing.expertOffsets();
    int[] slots = new int[routing.tokenRows().length];
    for (int e = 0; e < routing.numExperts(); e++)
      for (int at = offsets[e]; at < offsets[e + 1]; at++) slots[at] = slot(placement, layerId, e, at - offsets[e], batchSeq);
    return slots;
  }
}
