package io.moemesh.expert;

import io.moemesh.model.moe.Placement;
import io.moemesh.proto.expert.v1.LayerSlots;
import io.moemesh.proto.expert.v1.PlacementTable;
import java.util.Arrays;

/** {@link Placement} on the wire ({@code PlacementTable}) and back. */
final class PlacementTables {
  private PlacementTables() {}

  static PlacementTable toProto(Placement p) {
    var b = PlacementTable.newBuilder().setVersion(p.version()).setNumShards(p.numShards()).setNumExperts(p.numExperts());
    for (int layer = 0; layer < p.numLayers(); layer++)
      if (p.isMoeLayer(layer))
        b.addLayers(LayerSlots.newBuilder().setLayerId(layer).addAllPhysicalToLogical(Arrays.stream(p.physicalToLogical(layer)).boxed().toList()));
    if (!p.isHome()) b.addAllSlotToShard(Arrays.stream(p.slotToShard()).boxed().toList());
    return b.build();
  }

  /**
   * The placement {@code table} describes, over {@code numLayers} layer ids (a model's: dense layers have no
   * entry); a malformed table is an IllegalArgumentException saying why.
   */
  static Placement fromProto(PlacementTable table, int numLayers) {
    int[][] map = new int[numLayers][];
    for (LayerSlots l : table.getLayersList()) {
      if (l.getLayerId() < 0 || l.getLayerId() >= numLayers)
        throw new IllegalArgumentException("layer id " + l.getLayerId() + " is not in [0, " + numLayers + ")");
      if (map[l.getLayerId()] != null) throw new IllegalArgumentException("layer " + l.getLayerId() + " appears twice");
      map[l.getLayerId()] = l.getPhysicalToLogicalList().stream().mapToInt(Integer::intValue).toArray();
    }
    Placement p = Placement.of(table.getVersion(), table.getNumShards(), table.getNumExperts(), map);
    return table.getSlotToShardCount() == 0 ? p
        : p.hostedOn(table.getSlotToShardList().stream().mapToInt(Integer::intValue).toArray(), table.getVersion());
  }

  /** Whether {@code a} and {@code b} put the same experts in the same slots (whatever their versions). */
  static boolean sameSlots(Placement a, Placement b) {
    return a.withVersion(b.version()).equals(b);
  }
}
