package io.moemesh.expert;

import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.expert.PlacementCoordinator.Outcome;
import io.moemesh.expert.PlacementCoordinator.Policy;
import io.moemesh.expert.PlacementCoordinator.Round;
import io.moemesh.model.moe.Placement;
import io.moemesh.proto.expert.v1.ExpertLoadReport;
import io.moemesh.proto.expert.v1.ExpertRole;
import io.moemesh.proto.expert.v1.ExpertServiceInfo;
import io.moemesh.proto.expert.v1.LayerLoad;
import io.moemesh.proto.expert.v1.PlacementInUse;
import io.moemesh.proto.expert.v1.PlacementTable;
import io.moemesh.proto.expert.v1.PrepareResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The balancer's rounds against fake shards that keep their placements as expert-svc does (the newest prepared
 * and the one before; a version not above the newest is refused): no model, no network.
 */
class PlacementCoordinatorTest {
  static final int EXPERTS = 8, SHARDS = 2, REDUNDANT = 2;
  static final boolean[] MOE = {false, true, true}; // layer 0 dense, as DeepSeek's first layers
  static final Placement INITIAL = Placement.initial(MOE, EXPERTS, SHARDS, REDUNDANT);
  static final Policy POLICY = new Policy(Duration.ofSeconds(5), 0.02, 100);

  List<FakeShard> shards;
  PlacementCoordinator coordinator;

  @BeforeEach
  void mesh() {
    shards = List.of(new FakeShard(0), new FakeShard(1));
    coordinator = new PlacementCoordinator(new ArrayList<>(shards), INITIAL, POLICY);
  }

  /** Every shard holds the experts of the active placement, whatever happened. */
  Round round() {
    Round r = coordinator.round();
    assertThat(r.active()).isSameAs(coordinator.active());
    for (FakeShard s : shards) assertThat(s.holdsAllOf(coordinator.active())).as("shard %d holds the active experts after %s", s.index, r).isTrue();
    return r;
  }

  /** Shard 0 computed {@code hot} tokens of expert 3 and 10 of every other expert, in every MoE layer. */
  void skew(long hot) {
    long[] tokens = new long[EXPERTS];
    Arrays.fill(tokens, 10);
    tokens[3] = hot;
    shards.get(0).tokens = tokens;
  }

  @Nested
  class Rebalance {
    @Test
    void noLoadLeavesThePlacementAlone() {
      Round r = round();
      assertThat(r.outcome()).isEqualTo(Outcome.UNCHANGED);
      assertThat(r.balancedness()).isEqualTo(1.0);
      assertThat(shards).allSatisfy(s -> assertThat(s.prepared).isEmpty());
      assertThat(coordinator.active()).isSameAs(INITIAL);
    }

    @Test
    void aSkewedLoadIsPreparedOnEveryShardBeforeItIsPublished() {
      skew(1000);
      Round r = round();
      assertThat(r.outcome()).as(r.detail()).isEqualTo(Outcome.PUBLISHED);
      assertThat(r.active().version()).isEqualTo(1);
      assertThat(r.balancedness()).isLessThan(0.7);
      assertThat(r.proposedBalancedness()).isGreaterThan(r.balancedness() + 0.2);
      assertThat(r.shardTokens()).containsExactly((1000 + 7 * 10L) * 2, 0); // two MoE layers, all counted by shard 0
      for (FakeShard s : shards) {
        assertThat(s.prepared).extracting(PlacementTable::getVersion).containsExactly(1L);
        assertThat(s.activeWhenPrepared).as("published only after every shard prepared").containsExactly(0L);
        assertThat(PlacementTables.fromProto(s.prepared.get(0), MOE.length)).isEqualTo(r.active());
      }
      assertThat(r.active().replicas(1, 3)).as("the hot expert gets the redundant slots").isEqualTo(1 + REDUNDANT);
    }

    @Test
    void aBalancedPlacementStays() {
      skew(1000);
      round();
      Round again = round();
      assertThat(again.outcome()).isEqualTo(Outcome.UNCHANGED);
      assertThat(again.balancedness()).isEqualTo(again.proposedBalancedness());
      assertThat(shards.get(1).prepared).hasSize(1);
    }

    @Test
    void tooFewTokensMoveNothing() {
      shards.get(0).tokens = new long[] {0, 0, 0, 90, 0, 0, 0, 0}; // 90 tokens per MoE layer, the policy wants 100
      Round r = round();
      assertThat(r.outcome()).as(r.detail()).isEqualTo(Outcome.UNCHANGED);
      assertThat(r.proposedBalancedness()).as("it would move, given more tokens").isGreaterThan(r.balancedness());
      assertThat(shards.get(0).prepared).isEmpty();
    }

    @Test
    void aGainBelowTheMinimumMovesNothing() {
      coordinator = new PlacementCoordinator(new ArrayList<>(shards), INITIAL, new Policy(Duration.ofSeconds(5), 0.9, 100));
      skew(1000);
      assertThat(round().outcome()).isEqualTo(Outcome.UNCHANGED);
      assertThat(shards.get(0).prepared).isEmpty();
    }
  }

  @Nested
  class Failures {
    @Test
    void aFailedPrepareKeepsTheActivePlacementAndTheNextRoundRepairsIt() {
      skew(1000);
      shards.get(1).failPrepare = true;
      Round failed = round();
      assertThat(failed.outcome()).isEqualTo(Outcome.FAILED);
      assertThat(failed.detail()).contains("shard 1 cannot load experts");
      assertThat(coordinator.active()).isSameAs(INITIAL);
      assertThat(shards.get(0).newest().version()).as("shard 0 prepared the version that failed elsewhere").isEqualTo(1);

      shards.get(1).failPrepare = false;
      Round repaired = round();
      assertThat(repaired.outcome()).as(repaired.detail()).isEqualTo(Outcome.REPAIRED);
      assertThat(repaired.active().version()).as("version 1 is never reused").isEqualTo(2);
      assertThat(PlacementTables.sameSlots(repaired.active(), INITIAL)).isTrue();
      assertThat(shards).allSatisfy(s -> assertThat(s.newest()).isEqualTo(repaired.active()));

      Round moved = round();
      assertThat(moved.outcome()).isEqualTo(Outcome.PUBLISHED);
      assertThat(moved.active().version()).isEqualTo(3);
    }

    @Test
    void aShardThatDoesNotAnswerSkipsTheRound() {
      skew(1000);
      shards.get(1).down = true;
      Round r = round();
      assertThat(r.outcome()).isEqualTo(Outcome.SKIPPED);
      assertThat(r.detail()).contains("shard 1 is down");
      assertThat(shards.get(0).prepared).isEmpty();
    }

    @Test
    void aRestartedShardGetsTheActiveSlotsUnderANewVersion() {
      skew(1000);
      Placement v1 = round().active();
      shards.get(1).restart();
      Round r = round();
      assertThat(r.outcome()).isEqualTo(Outcome.REPAIRED);
      assertThat(r.active().version()).isEqualTo(2);
      assertThat(PlacementTables.sameSlots(r.active(), v1)).isTrue();
    }

    @Test
    void aRestartedCoordinatorStartsAboveTheShardsVersions() {
      skew(1000);
      round();
      round();
      var restarted = new PlacementCoordinator(new ArrayList<>(shards), INITIAL, POLICY);
      Round r = restarted.round();
      assertThat(r.outcome()).as("shards hold version 1, it knows version 0").isEqualTo(Outcome.REPAIRED);
      assertThat(r.active().version()).isEqualTo(2);
    }

    @Test
    void aRestartedShardZeroResumesThePlacementTheOtherShardsHold() {
      skew(1000);
      Placement v1 = round().active();
      assertThat(PlacementTables.sameSlots(v1, INITIAL)).isFalse();
      shards.get(0).restart(); // shard 0 and its balancer start over from the initial placement
      coordinator = new PlacementCoordinator(new ArrayList<>(shards), INITIAL, POLICY);
      Round r = round();
      assertThat(r.outcome()).as(r.detail()).isEqualTo(Outcome.REPAIRED);
      assertThat(r.detail()).contains("resumed");
      assertThat(r.active().version()).isEqualTo(2);
      assertThat(PlacementTables.sameSlots(r.active(), v1)).as("version 1's slots, not the initial ones").isTrue();
    }

    @Test
    void aPreparedPlacementOfAnotherShapeIsNotResumed() {
      skew(1000);
      round();
      shards.get(0).restart();
      shards.get(1).newest = Placement.initial(MOE, EXPERTS, SHARDS, REDUNDANT + 2).withVersion(7); // another mesh's slots
      coordinator = new PlacementCoordinator(new ArrayList<>(shards), INITIAL, POLICY);
      Round r = coordinator.round();
      assertThat(r.outcome()).isEqualTo(Outcome.REPAIRED);
      assertThat(r.detail()).doesNotContain("resumed");
      assertThat(PlacementTables.sameSlots(r.active(), INITIAL)).isTrue();
      assertThat(r.active().version()).as("above every version a shard holds").isEqualTo(8);
    }
  }

  @Nested
  class Settle {
    @Test
    void framesOfAnOlderPlacementHoldTheNextChangeUntilTheyStop() {
      skew(1000);
      round();
      shards.get(1).inUse = List.of(use(1, 10), use(0, 4_000)); // a replica used version 0 4 s ago
      skew(10); // the load moved back: the balancer would move experts again
      shards.get(1).tokens = new long[] {500, 10, 10, 10, 10, 10, 10, 10};
      Round r = round();
      assertThat(r.outcome()).as(r.detail()).isEqualTo(Outcome.SETTLING);
      assertThat(r.detail()).contains("placement version 0").contains("4000 ms ago");

      shards.get(1).inUse = List.of(use(1, 10), use(0, 6_000));
      assertThat(round().outcome()).isEqualTo(Outcome.PUBLISHED);
    }
  }

  @Nested
  class Failover {
    /** Heartbeats until one changes something (or {@code max} went by). */
    PlacementCoordinator.Heartbeat beats(int max) {
      PlacementCoordinator.Heartbeat h = null;
      for (int i = 0; i < max; i++) {
        h = coordinator.heartbeat();
        if (h.outcome() != Outcome.UNCHANGED || !h.lost().isEmpty() || !h.back().isEmpty()) return h;
      }
      return h;
    }

    @Test
    void aShardThatMissesThreeHeartbeatsIsLostAndItsSlotsAreHostedOnTheLiveOne() {
      assertThat(beats(5).outcome()).as("every shard answers: nothing to do").isEqualTo(Outcome.UNCHANGED);
      shards.get(1).down = true;
      assertThat(coordinator.heartbeat().lost()).as("one miss is not a loss").isEmpty();
      assertThat(coordinator.heartbeat().lost()).isEmpty();
      var h = coordinator.heartbeat();
      assertThat(h.lost()).containsOnlyKeys(1);
      assertThat(h.lost().get(1)).contains("shard 1 is down");
      assertThat(h.outcome()).as(h.detail()).isEqualTo(Outcome.REPLACED);
      assertThat(coordinator.liveShards()).isEqualTo(1);
      Placement active = coordinator.active();
      assertThat(active.version()).isEqualTo(1);
      assertThat(active.slotToShard()).containsOnly(0);
      assertThat(PlacementTables.sameSlots(active.hostedOn(INITIAL.slotToShard(), 0), INITIAL)).as("the same slot maps").isTrue();
      assertThat(shards.get(0).prepared).extracting(PlacementTable::getVersion).containsExactly(1L);
      assertThat(shards.get(0).holdsAllOf(active)).isTrue();
      assertThat(active.expertsOnShard(1, 0)).as("shard 0 now computes every expert").hasSize(EXPERTS);
      assertThat(shards.get(1).prepared).as("nothing is sent to a lost shard").isEmpty();
      assertThat(coordinator.heartbeat().outcome()).as("still lost: nothing more to do").isEqualTo(Outcome.UNCHANGED);
      assertThat(coordinator.round().outcome()).as("no rebalancing while degraded").isEqualTo(Outcome.DEGRADED);
    }

    @Test
    void aRestartedShardGetsItsSlotsBackAndTheBalancerGoesOn() {
      coordinator.heartbeat(); // every shard has answered: from now on misses count
      shards.get(1).down = true;
      assertThat(beats(3).outcome()).isEqualTo(Outcome.REPLACED);
      FakeShard restarted = shards.get(1);
      restarted.down = false; // restarted: it resumed the newest placement its peers prepared, where it hosts nothing
      restarted.previous = null;
      restarted.newest = shards.get(0).newest();
      var h = coordinator.heartbeat();
      assertThat(h.back()).containsExactly(1);
      assertThat(h.outcome()).as(h.detail()).isEqualTo(Outcome.REHOMED);
      assertThat(coordinator.active().version()).isEqualTo(2);
      assertThat(coordinator.active().isHome()).isTrue();
      for (FakeShard s : shards) assertThat(s.holdsAllOf(coordinator.active())).as("shard %d", s.index).isTrue();
      assertThat(restarted.prepared).extracting(PlacementTable::getVersion).containsExactly(2L);
      skew(1000);
      assertThat(round().outcome()).as("balancing resumes once every slot is home").isEqualTo(Outcome.PUBLISHED);
      assertThat(coordinator.active().version()).isEqualTo(3);
    }

    @Test
    void aFailedPrepareKeepsTheActivePlacementAndTheNextHeartbeatTriesAgainUnderANewVersion() {
      coordinator.heartbeat();
      shards.get(1).down = true;
      shards.get(0).failPrepare = true;
      var h = beats(3);
      assertThat(h.outcome()).as(h.detail()).isEqualTo(Outcome.FAILED);
      assertThat(coordinator.active()).isSameAs(INITIAL);
      shards.get(0).failPrepare = false;
      h = coordinator.heartbeat();
      assertThat(h.outcome()).as(h.detail()).isEqualTo(Outcome.REPLACED);
      assertThat(coordinator.active().version()).as("version 1 was asked for once: never reused").isEqualTo(2);
    }

    @Test
    void aShardStillLoadingAsTheMeshStartsIsNotLost() {
      shards.get(1).down = true; // has never answered
      assertThat(beats(10).lost()).isEmpty();
      assertThat(coordinator.active()).isSameAs(INITIAL);
    }

    @Test
    void aShardAnsweringAsAnotherCountsAsMissing() {
      coordinator = new PlacementCoordinator(new ArrayList<>(shards), INITIAL, POLICY, 1);
      coordinator.heartbeat();
      shards.get(1).answersAs = 0; // another process took shard 1's address: it answers as shard 0
      var h = coordinator.heartbeat();
      assertThat(h.lost()).containsOnlyKeys(1);
      assertThat(h.lost().get(1)).contains("answered as EXPERT_ROLE_ROUTED shard 0");
    }
  }

  static PlacementInUse use(long version, long idleMillis) {
    return PlacementInUse.newBuilder().setPlacementVersion(version).setIdleMillis(idleMillis).build();
  }

  /** A routed shard's placement bookkeeping as {@link ExpertHost} keeps it. */
  final class FakeShard implements ShardClient {
    final int index;
    final List<PlacementTable> prepared = new ArrayList<>();
    final List<Long> activeWhenPrepared = new ArrayList<>();
    Placement previous, newest = INITIAL;
    long[] tokens = new long[EXPERTS];
    List<PlacementInUse> inUse = List.of();
    boolean down, failPrepare;
    int answersAs;

    FakeShard(int index) {
      this.index = index;
      this.answersAs = index;
    }

    Placement newest() {
      return newest;
    }

    void restart() {
      previous = null;
      newest = INITIAL;
    }

    boolean holdsAllOf(Placement p) {
      for (int layer = 0; layer < MOE.length; layer++) {
        if (!MOE[layer]) continue;
        for (int e : p.expertsOnShard(layer, index))
          if (!holds(newest, layer, e) && (previous == null || !holds(previous, layer, e))) return false;
      }
      return true;
    }

    private boolean holds(Placement p, int layer, int expert) {
      return Arrays.stream(p.expertsOnShard(layer, index)).anyMatch(e -> e == expert);
    }

    @Override
    public String name() {
      return "shard " + index;
    }

    @Override
    public ExpertServiceInfo info() {
      if (down) throw new IllegalStateException(name() + " is down");
      return ExpertServiceInfo.newBuilder().setRole(ExpertRole.EXPERT_ROLE_ROUTED).setShard(answersAs).setNumShards(SHARDS)
          .setPlacementVersion(newest.version()).setPreparedPlacement(PlacementTables.toProto(newest)).build();
    }

    @Override
    public ExpertLoadReport load() {
      if (down) throw new IllegalStateException(name() + " is down");
      var b = ExpertLoadReport.newBuilder().setShard(index).addAllPlacementsInUse(inUse);
      for (int layer = 0; layer < MOE.length; layer++)
        if (MOE[layer]) b.addLayers(LayerLoad.newBuilder().setLayerId(layer).addAllTokensPerExpert(Arrays.stream(tokens).boxed().toList()));
      return b.build();
    }

    @Override
    public PrepareResponse prepare(PlacementTable table) {
      if (down) throw new IllegalStateException(name() + " is down");
      if (failPrepare) throw new IllegalStateException(name() + " cannot load experts");
      Placement next = PlacementTables.fromProto(table, MOE.length);
      prepared.add(table);
      activeWhenPrepared.add(coordinator.active().version());
      if (next.version() <= newest.version()) throw new IllegalStateException("version " + next.version() + " is not above " + newest.version());
      previous = newest;
      newest = next;
      return PrepareResponse.newBuilder().setPlacementVersion(next.version()).build();
    }
  }
}
