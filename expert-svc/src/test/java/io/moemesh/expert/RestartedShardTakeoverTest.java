package io.moemesh.expert;

import static io.moemesh.expert.PlacementCoordinatorTest.INITIAL;
import static io.moemesh.expert.PlacementCoordinatorTest.POLICY;
import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.expert.PlacementCoordinator.Outcome;
import io.moemesh.model.moe.Placement;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A routed shard that has never answered this shard: starting while the placement in use still hosts its slots,
 * lost when that placement already hosts them elsewhere (it was lost before this shard started).
 */
class RestartedShardTakeoverTest {
  List<FakeShard> shards;
  PlacementCoordinator onShard1;
  FakeShard.Cut shard0SeenFromShard1;

  @BeforeEach
  void mesh() {
    shards = List.of(new FakeShard(0), new FakeShard(1));
    shard0SeenFromShard1 = new FakeShard.Cut(shards.get(0));
    onShard1 = new PlacementCoordinator(List.of(shard0SeenFromShard1, shards.get(1)), INITIAL, POLICY, 3, 1);
    shards.get(1).publishes = () -> onShard1.active();
    shards.get(1).coordinatorActive = () -> onShard1.active();
  }

  PlacementCoordinator.Heartbeat beat(PlacementCoordinator c) {
    var h = c.heartbeat();
    assertThat(h.active()).isSameAs(c.active());
    return h;
  }

  @Test
  void aShardRestartedWhileALowerOneIsDownTakesOverWhenThePlacementItResumedHostsThatShardsSlotsElsewhere() {
    beat(onShard1);
    shards.get(0).down = true;
    for (int i = 0; i < 3; i++) beat(onShard1);
    Placement replaced = onShard1.active();
    assertThat(replaced.slotToShard()).as("shard 1 took over and hosts every slot").containsOnly(1);

    // shard 1 restarts while shard 0 is still down; it resumed version 1 (in a bigger mesh, from a third shard's Info)
    FakeShard restarted = shards.get(1);
    restarted.previous = null;
    restarted.newest = replaced;
    onShard1 = new PlacementCoordinator(List.of(shard0SeenFromShard1, restarted), replaced, POLICY, 3, 1);
    var h = beat(onShard1);
    assertThat(h.lost()).as("shard 0 never answered this shard, but the placement shows it was lost").containsOnlyKeys(0);
    assertThat(h.lost().get(0)).contains("has not answered since this shard started, and placement version 1 hosts its slots elsewhere");
    assertThat(onShard1.coordinating()).isTrue();
    assertThat(h.outcome()).as("its slots are hosted already: " + h.detail()).isEqualTo(Outcome.UNCHANGED);

    shards.get(0).down = false; // shard 0 is back (it resumed version 1 too)
    shards.get(0).previous = null;
    shards.get(0).newest = replaced;
    h = beat(onShard1);
    assertThat(h.back()).containsExactly(0);
    assertThat(h.outcome()).as("shard 0 coordinates again: it brings its slots home").isEqualTo(Outcome.FOLLOWING);
  }

  @Test
  void aShardThatNeverAnsweredStaysStartingWhileThePlacementStillHostsItsSlots() {
    shards.get(0).down = true; // shard 1 starts while shard 0 still loads: the starting placement hosts shard 0's slots on it
    for (int i = 0; i < 10; i++) assertThat(beat(onShard1).lost()).isEmpty();
    assertThat(onShard1.coordinating()).isFalse();
    assertThat(onShard1.active()).isSameAs(INITIAL);
  }
}
