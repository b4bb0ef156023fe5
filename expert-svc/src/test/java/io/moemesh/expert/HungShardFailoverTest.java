package io.moemesh.expert;

import static io.moemesh.expert.PlacementCoordinatorTest.INITIAL;
import static io.moemesh.expert.PlacementCoordinatorTest.POLICY;
import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.expert.PlacementCoordinator.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A hung routed shard (SIGSTOP: connections open, nothing answers) as the coordinator's heartbeats see it: a heartbeat left
 * unanswered stays under way while the next ones go on, and the shard is lost once silent past the bound, not after
 * deadlines missed in a row; a late answer within the bound is no miss.
 */
class HungShardFailoverTest {
  private final List<FakeShard> shards = List.of(new FakeShard(0), new FakeShard(1));

  @Test
  void aHungShardIsLostOnceSilentPastTheBoundWithoutWaitingOutItsCallsAndBackWhenItAnswers() {
    var watching = new PlacementCoordinator(new ArrayList<ShardClient>(shards), INITIAL, POLICY, 3, 0, Duration.ofNanos(1), Duration.ofMillis(500));
    assertThat(watching.heartbeat().outcome()).isEqualTo(Outcome.UNCHANGED);
    var stopped = new java.util.concurrent.CountDownLatch(1);
    shards.get(1).hung = stopped;
    var h = watching.heartbeat();
    assertThat(h.lost()).as("its heartbeat is still waiting, and it has been silent past the bound: lost, with no failed call")
        .containsOnlyKeys(1);
    assertThat(h.lost().get(1)).startsWith("silent: no answer for");
    assertThat(h.outcome()).as(h.detail()).isEqualTo(Outcome.REPLACED);
    assertThat(watching.active().slotToShard()).containsOnly(0);
    stopped.countDown(); // SIGCONT: the call under way answers
    shards.get(1).hung = null;
    var back = watching.heartbeat();
    assertThat(back.back()).containsExactly(1);
    assertThat(back.outcome()).as(back.detail()).isEqualTo(Outcome.REHOMED);
  }

  @Test
  void aShardWhoseHeartbeatIsLateButWithinTheSilenceBoundIsNotLost() {
    var patient = new PlacementCoordinator(new ArrayList<ShardClient>(shards), INITIAL, POLICY, 3, 0, Duration.ofDays(1), Duration.ofMillis(500));
    patient.heartbeat();
    var slow = new java.util.concurrent.CountDownLatch(1);
    shards.get(1).hung = slow;
    for (int i = 0; i < 3; i++) assertThat(patient.heartbeat().lost()).as("a late answer is no miss").isEmpty();
    assertThat(patient.liveShards()).isEqualTo(2);
    slow.countDown();
    shards.get(1).hung = null;
    assertThat(patient.heartbeat().outcome()).isEqualTo(Outcome.UNCHANGED);
    assertThat(patient.active().isHome()).isTrue();
  }
}
