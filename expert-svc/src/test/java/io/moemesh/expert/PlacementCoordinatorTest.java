package io.moemesh.expert;

import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.expert.PlacementCoordinator.Outcome;
import io.moemesh.expert.PlacementCoordinator.Policy;
import io.moemesh.expert.PlacementCoordinator.Round;
import io.moemesh.model.moe.Placement;
import io.moemesh.proto.expert.v1.ExpertLoadReport;
import io.moemesh.proto.expert.v1.ExpertServiceInfo;
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
    for (FakeShard s : shards) s.coordinatorActive = () -> coordinator.active();
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
      coordinator = new PlacementCoordinator(new ArrayList<>(shards), INITIAL, POLICY, 1, 0);
      coordinator.heartbeat();
      shards.get(1).answersAs = 0; // another process took shard 1's address: it answers as shard 0
      var h = coordinator.heartbeat();
      assertThat(h.lost()).containsOnlyKeys(1);
      assertThat(h.lost().get(1)).contains("answered as EXPERT_ROLE_ROUTED shard 0");
    }
  }

  /**
   * No single coordinator: each shard runs its own coordinator over every shard; the lowest-numbered live shard in
   * its view coordinates, the others follow the placement it publishes and take over when it is lost.
   */
  @Nested
  class Succession {
    PlacementCoordinator onShard1;
    FakeShard.Cut shard0SeenFromShard1;

    @BeforeEach
    void twoCoordinators() {
      shards.get(0).publishes = () -> coordinator.active();
      shard0SeenFromShard1 = new FakeShard.Cut(shards.get(0));
      onShard1 = new PlacementCoordinator(List.of(shard0SeenFromShard1, shards.get(1)), INITIAL, POLICY, 3, 1);
      shards.get(1).publishes = () -> onShard1.active();
    }

    PlacementCoordinator.Heartbeat beat(PlacementCoordinator c) {
      var h = c.heartbeat();
      assertThat(h.active()).isSameAs(c.active());
      return h;
    }

    @Test
    void shard1FollowsShard0AndAdoptsWhatItPublishes() {
      beat(coordinator);
      assertThat(beat(onShard1).outcome()).isEqualTo(Outcome.FOLLOWING);
      assertThat(onShard1.coordinating()).isFalse();
      assertThat(onShard1.round().outcome()).as("only the coordinator balances").isEqualTo(Outcome.FOLLOWING);
      skew(1000);
      assertThat(round().outcome()).isEqualTo(Outcome.PUBLISHED);
      var h = beat(onShard1);
      assertThat(h.detail()).contains("adopted version 1 published by shard 0");
      assertThat(onShard1.active()).isEqualTo(coordinator.active());
      assertThat(shards.get(1).prepared).extracting(PlacementTable::getVersion).as("a follower prepares nothing").containsExactly(1L);
    }

    @Test
    void whenShard0IsLostShard1TakesOverAndARestartedShard0TakesBackAndBringsItsSlotsHome() {
      skew(1000);
      beat(coordinator);
      round(); // version 1, published by shard 0
      beat(onShard1); // shard 1 adopts it
      shards.get(0).down = true; // kill -9 of shard 0, which coordinated
      assertThat(beat(onShard1).outcome()).isEqualTo(Outcome.FOLLOWING);
      assertThat(beat(onShard1).outcome()).isEqualTo(Outcome.FOLLOWING);
      var h = beat(onShard1);
      assertThat(h.lost()).containsOnlyKeys(0);
      assertThat(onShard1.coordinating()).isTrue();
      assertThat(h.outcome()).as(h.detail()).isEqualTo(Outcome.REPLACED);
      Placement replaced = onShard1.active();
      assertThat(replaced.version()).isEqualTo(2);
      assertThat(replaced.slotToShard()).containsOnly(1);
      assertThat(PlacementTables.sameSlots(replaced.hostedOn(INITIAL.slotToShard(), 1), shards.get(0).newest().hostedOn(INITIAL.slotToShard(), 1)))
          .as("the slot maps of the placement the replicas used (version 1), not the starting one").isTrue();
      assertThat(shards.get(1).holdsAllOf(replaced)).isTrue();

      // shard 0 restarts: it resumes the newest placement its peers prepared and starts a fresh coordinator from it
      FakeShard restarted = shards.get(0);
      restarted.down = false;
      restarted.previous = null;
      restarted.newest = shards.get(1).newest();
      coordinator = new PlacementCoordinator(new ArrayList<>(shards), restarted.newest(), POLICY, 3, 0);
      assertThat(beat(onShard1).outcome()).as("shard 0 answers again: shard 1 steps back").isEqualTo(Outcome.FOLLOWING);
      assertThat(onShard1.coordinating()).isFalse();
      h = beat(coordinator);
      assertThat(h.outcome()).as(h.detail()).isEqualTo(Outcome.REHOMED);
      assertThat(coordinator.active().version()).isEqualTo(3);
      assertThat(coordinator.active().isHome()).isTrue();
      for (FakeShard s : shards) assertThat(s.holdsAllOf(coordinator.active())).as("shard %d", s.index).isTrue();
      beat(onShard1);
      assertThat(onShard1.active()).isEqualTo(coordinator.active());
    }

    @Test
    void underASplitViewBothMayCoordinateButVersionsNeverRepeatAndEachPublishedPlacementIsHeldWhereItSendsFrames() {
      beat(coordinator);
      beat(onShard1);
      shard0SeenFromShard1.cut = true; // shard 1 cannot reach shard 0; shard 0 still reaches shard 1
      for (int i = 0; i < 3; i++) beat(onShard1);
      assertThat(onShard1.coordinating()).isTrue();
      Placement byShard1 = onShard1.active();
      assertThat(byShard1.version()).isEqualTo(1);
      assertThat(byShard1.slotToShard()).containsOnly(1);
      assertThat(shards.get(1).holdsAllOf(byShard1)).isTrue();
      var h = beat(coordinator); // shard 0 adopts the higher version shard 1 published, and brings its slots home
      assertThat(h.outcome()).as(h.detail()).isEqualTo(Outcome.REHOMED);
      assertThat(coordinator.active().version()).isEqualTo(2);
      for (FakeShard s : shards) assertThat(s.holdsAllOf(coordinator.active())).as("shard %d", s.index).isTrue();
      assertThat(beat(onShard1).outcome()).as("shard 1's view has not changed: nothing to do").isEqualTo(Outcome.UNCHANGED);
      assertThat(shards.get(1).prepared).extracting(PlacementTable::getVersion).as("each shard's versions rise").containsExactly(1L, 2L);
      shard0SeenFromShard1.cut = false; // healed: shard 1 adopts version 2 and steps back
      assertThat(beat(onShard1).outcome()).isEqualTo(Outcome.FOLLOWING);
      assertThat(onShard1.active()).isEqualTo(coordinator.active());
    }

    @Test
    void aCoordinatorNeverReusesAVersionAnotherPreparedOnAShard() {
      beat(coordinator);
      beat(onShard1);
      shard0SeenFromShard1.cut = true;
      for (int i = 0; i < 2; i++) beat(onShard1);
      // meanwhile shard 0, which shard 1 no longer sees, prepared version 1 (a repair) on shard 1
      shards.get(1).prepare(PlacementTables.toProto(INITIAL.withVersion(1)));
      var h = beat(onShard1);
      assertThat(h.outcome()).as(h.detail()).isEqualTo(Outcome.REPLACED);
      assertThat(onShard1.active().version()).as("it read version 1 on shard 1 and took the next").isEqualTo(2);
    }
  }

  static PlacementInUse use(long version, long idleMillis) {
    return PlacementInUse.newBuilder().setPlacementVersion(version).setIdleMillis(idleMillis).build();
  }
}
