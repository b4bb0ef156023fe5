package io.moemesh.model.moe.balance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.model.moe.Placement;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** {@link ShardFailover}: the worked examples of its Javadoc, and what hosting does to a {@link Placement}. */
class ShardFailoverTest {
  static final boolean[] MOE = {false, true, true};
  // 8 experts on 2 shards × 5 slots: experts 0-4 on shard 0, 5-7 and copies of 0, 1 on shard 1
  static final Placement TWO = Placement.initial(MOE, 8, 2, 2);

  @Nested
  class Hosts {
    @Test
    void aLostShardsSlotsMoveToTheLiveOneAndComeHomeWhenItIsBack() {
      int[] lost = ShardFailover.hosts(TWO, new boolean[] {true, false});
      assertThat(lost).containsExactly(0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
      Placement hosted = TWO.hostedOn(lost, 1);
      assertThat(hosted.expertsOnShard(1, 0)).as("shard 0 holds every expert").containsExactly(0, 1, 2, 3, 4, 5, 6, 7);
      assertThat(hosted.expertsOnShard(1, 1)).isEmpty();
      assertThat(hosted.isHome()).isFalse();

      int[] back = ShardFailover.hosts(hosted, new boolean[] {true, true});
      assertThat(back).containsExactly(0, 0, 0, 0, 0, 1, 1, 1, 1, 1);
      assertThat(hosted.hostedOn(back, 2).isHome()).isTrue();
      assertThat(ShardFailover.hosts(TWO, new boolean[] {true, true})).as("nothing lost, nothing moves").isEqualTo(TWO.slotToShard());
    }

    @Test
    void slotsSpreadOverTheShardsHostingFewest() {
      Placement three = Placement.initial(MOE, 6, 3, 0); // 3 shards × 2 slots
      assertThat(ShardFailover.hosts(three, new boolean[] {true, true, false})).containsExactly(0, 0, 1, 1, 0, 1);
    }

    @Test
    void aHostedSlotStaysWhereItIsWhenAnotherShardIsLost() {
      Placement three = Placement.initial(MOE, 6, 3, 0);
      Placement shard2Lost = three.hostedOn(ShardFailover.hosts(three, new boolean[] {true, true, false}), 1);
      // then shard 0 goes too: its slots go to shard 1, and slot 4 (shard 2's, hosted on shard 0) as well; slot 5 stays
      assertThat(ShardFailover.hosts(shard2Lost, new boolean[] {false, true, false})).containsExactly(1, 1, 1, 1, 1, 1);
      // shard 2 back while shard 0 is still lost: shard 2's slots go home, shard 0's stay on shard 1
      Placement shard0Lost = shard2Lost.hostedOn(new int[] {1, 1, 1, 1, 2, 1}, 2);
      assertThat(ShardFailover.hosts(shard0Lost, new boolean[] {false, true, true})).containsExactly(1, 1, 1, 1, 2, 2);
    }

    @Test
    void noLiveShardIsRefused() {
      assertThatThrownBy(() -> ShardFailover.hosts(TWO, new boolean[] {false, false})).hasMessageContaining("no routed shard is live");
      assertThatThrownBy(() -> ShardFailover.hosts(TWO, new boolean[] {true})).hasMessageContaining("1 shards' liveness");
    }
  }

  @Nested
  class HostedPlacement {
    @Test
    void slotsKeepTheirExpertsAndReplicasOnlyTheirShardChanges() {
      Placement hosted = TWO.hostedOn(ShardFailover.hosts(TWO, new boolean[] {true, false}), 7);
      assertThat(hosted.version()).isEqualTo(7);
      for (int slot = 0; slot < TWO.numSlots(); slot++) {
        assertThat(hosted.expertAt(1, slot)).isEqualTo(TWO.expertAt(1, slot));
        assertThat(hosted.homeShard(slot)).isEqualTo(TWO.shardOf(slot));
        assertThat(hosted.shardOf(slot)).isZero();
      }
      assertThat(hosted.replicas(1, 0)).isEqualTo(2);
      assertThat(hosted.withVersion(8).slotToShard()).as("a new version keeps the hosts").isEqualTo(hosted.slotToShard());
      assertThat(hosted.withVersion(0)).as("hosts are part of a placement's identity").isNotEqualTo(TWO);
    }

    @Test
    void hostsOutsideTheShardsAreRefused() {
      assertThatThrownBy(() -> TWO.hostedOn(new int[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, 1)).hasMessageContaining("slot 9 is hosted on shard 2");
      assertThatThrownBy(() -> TWO.hostedOn(new int[] {0, 1}, 1)).hasMessageContaining("2 slot hosts for 10 slots");
    }
  }
}
