package io.moemesh.enginehost.experts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.model.moe.Placement;
import io.moemesh.proto.expert.v1.ExpertServiceInfo;
import io.moemesh.proto.expert.v1.LayerSlots;
import io.moemesh.proto.expert.v1.PlacementTable;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** Which published placement a decode replica takes: newer ones that fit its engine, nothing else. */
class PlacementWatcherTest {
  static final boolean[] MOE = {false, true, true};
  static final Placement INITIAL = Placement.initial(MOE, 8, 2, 2);

  @Test
  void aNewerPublishedPlacementIsTaken() {
    int[] moved = INITIAL.physicalToLogical(1);
    moved[9] = 3; // slot 9 (shard 1) holds a copy of expert 3 instead of expert 1
    var published = table(4, 2, moved);
    Placement next = PlacementWatcher.newer(info(published), INITIAL).orElseThrow();
    assertThat(next.version()).isEqualTo(4);
    assertThat(next.physicalToLogical(1)).containsExactly(moved);
    assertThat(next.physicalToLogical(2)).containsExactly(INITIAL.physicalToLogical(2));
    assertThat(next.numLayers()).isEqualTo(INITIAL.numLayers());
  }

  @Test
  void aFailoverPlacementKeepsItsSlotHosts() {
    int[] allOnShard0 = new int[INITIAL.numSlots()];
    var published = table(5, 2, INITIAL.physicalToLogical(1)).toBuilder()
        .addAllSlotToShard(Arrays.stream(allOnShard0).boxed().toList()).build();
    Placement next = PlacementWatcher.newer(info(published), INITIAL).orElseThrow();
    assertThat(next.slotToShard()).containsOnly(0);
    assertThat(next.expertsOnShard(1, 1)).as("the lost shard computes nothing").isEmpty();
    assertThat(next.expertsOnShard(1, 0)).hasSize(8);
    var badHost = table(6, 2, INITIAL.physicalToLogical(1)).toBuilder().addSlotToShard(0).build();
    assertThatThrownBy(() -> PlacementWatcher.newer(info(badHost), INITIAL)).hasMessageContaining("1 slot hosts for 10 slots");
  }

  @Test
  void theSameOrAnOlderVersionOrNoneIsIgnored() {
    assertThat(PlacementWatcher.newer(ExpertServiceInfo.getDefaultInstance(), INITIAL)).as("no balancer").isEmpty();
    assertThat(PlacementWatcher.newer(info(table(0, 2, INITIAL.physicalToLogical(1))), INITIAL)).isEmpty();
    Placement v3 = INITIAL.withVersion(3);
    assertThat(PlacementWatcher.newer(info(table(2, 2, INITIAL.physicalToLogical(1))), v3)).as("a restarted balancer's").isEmpty();
  }

  @Test
  void aPlacementForAnotherMeshIsRefused() {
    assertThatThrownBy(() -> PlacementWatcher.newer(info(table(1, 1, INITIAL.physicalToLogical(1))), INITIAL))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 shards");
    var oneLayer = PlacementTable.newBuilder().setVersion(1).setNumShards(2).setNumExperts(8)
        .addLayers(LayerSlots.newBuilder().setLayerId(1).addAllPhysicalToLogical(Arrays.stream(INITIAL.physicalToLogical(1)).boxed().toList()));
    assertThatThrownBy(() -> PlacementWatcher.newer(info(oneLayer.build()), INITIAL)).hasMessageContaining("lacks layer 2");
  }

  static ExpertServiceInfo info(PlacementTable active) {
    return ExpertServiceInfo.newBuilder().setActivePlacement(active).build();
  }

  /** Version {@code version} over {@code shards} shards: {@code layer1} in layer 1, the initial slots in layer 2. */
  static PlacementTable table(long version, int shards, int[] layer1) {
    return PlacementTable.newBuilder().setVersion(version).setNumShards(shards).setNumExperts(8)
        .addLayers(LayerSlots.newBuilder().setLayerId(1).addAllPhysicalToLogical(Arrays.stream(layer1).boxed().toList()))
        .addLayers(LayerSlots.newBuilder().setLayerId(2).addAllPhysicalToLogical(Arrays.stream(INITIAL.physicalToLogical(2)).boxed().toList()))
        .build();
  }
}
