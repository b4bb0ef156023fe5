package io.moemesh.planner.decide;

import static io.moemesh.planner.decide.Observations.decode;
import static io.moemesh.planner.decide.Observations.prefill;
import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.planner.observe.StageObservation;
import io.moemesh.planner.Stage;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Replays series of 10 s observations through the planner, the connector following each decision, as the service
 * loop does. Profile: 2000 prompt tokens/s per prefill replica at TTFT 500 ms, 8 requests per decode replica at ITL
 * 50 ms. Bounds 1..4, up cool-down 30 s, down cool-down 60 s, backlog drained over 10 s.
 */
class PlannerTest {
  static final Instant T0 = Instant.parse("2026-12-07T13:00:00Z");
  static final Profile PROFILE = new Profile(2000, 500, 8, 50, "test");
  static final PlannerSettings SETTINGS = new PlannerSettings(Duration.ofMillis(500), Duration.ofMillis(50), 0.9,
      new StageBounds(1, 4), new StageBounds(1, 4), Duration.ofSeconds(30), Duration.ofSeconds(60),
      Duration.ofSeconds(10), 4, 0.5);

  /** Feeds one observation every 10 s from {@code actual}; returns the decisions. */
  static List<Decision> replay(Planner planner, int actual, List<StageObservation> series) {
    List<Decision> decisions = new ArrayList<>();
    for (int i = 0; i < series.size(); i++) {
      Decision d = planner.decide(T0.plusSeconds(10L * i), series.get(i), actual);
      decisions.add(d);
      actual = d.desired();
    }
    return decisions;
  }

  static List<Integer> desired(List<Decision> decisions) {
    return decisions.stream().map(Decision::desired).toList();
  }

  static List<Reason> reasons(List<Decision> decisions) {
    return decisions.stream().map(Decision::reason).toList();
  }

  @Nested
  class Prefill {
    @Test
    void rampUpWaitsOutTheUpCooldownThenHoldsAndComesDownAfterTheLowerCountHeld() {
      var series = new ArrayList<StageObservation>();
      series.add(prefill(1500, 0, 0.2));         // t=0   1 replica's worth
      series.add(prefill(3500, 0, 0.3));         // t=10  2
      series.add(prefill(5500, 0, 0.4));         // t=20  3, but scaled up 10 s ago
      series.add(prefill(5500, 0, 0.4));         // t=30  still within 30 s
      series.add(prefill(4000, 20000, 0.4));     // t=40  4000 + 20000/10 s = 6000 → 3
      for (int i = 0; i < 3; i++) series.add(prefill(5000, 0, 0.3)); // t=50..70 hold at 3
      for (int i = 0; i < 7; i++) series.add(prefill(1000, 0, 0.1)); // t=80..140 one replica's worth
      List<Decision> decisions = replay(new Planner(SETTINGS, PROFILE), 1, series);
      assertThat(desired(decisions)).containsExactly(1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 1);
      assertThat(reasons(decisions)).containsExactly(Reason.STEADY, Reason.SCALE_UP, Reason.UP_COOLDOWN,
          Reason.UP_COOLDOWN, Reason.SCALE_UP, Reason.STEADY, Reason.STEADY, Reason.STEADY, Reason.DOWN_HOLD,
          Reason.DOWN_HOLD, Reason.DOWN_HOLD, Reason.DOWN_HOLD, Reason.DOWN_HOLD, Reason.DOWN_HOLD, Reason.SCALE_DOWN);
      assertThat(decisions.get(4).demand()).isEqualTo(6000);
      assertThat(decisions.get(4).required()).isEqualTo(3);
    }

    @Test
    void aSpikeInsideTheDownWindowScalesDownOnlyToTheWindowsHighestCount() {
      var series = new ArrayList<StageObservation>();
      series.add(prefill(7000, 0, 0.3));                              // t=0   4
      for (int i = 0; i < 5; i++) series.add(prefill(1000, 0, 0.1));  // t=10..50 1
      series.add(prefill(3000, 0, 0.2));                              // t=60  2; window [0, 60] still holds the 4
      series.add(prefill(1000, 0, 0.1));                              // t=70  1: window [10, 70] holds a 2 at most
      series.add(prefill(1000, 0, 0.1));                              // t=80  window [20, 80]: still the 2
      List<Decision> decisions = replay(new Planner(SETTINGS, PROFILE), 4, series);
      assertThat(desired(decisions)).containsExactly(4, 4, 4, 4, 4, 4, 4, 2, 2);
      assertThat(decisions.get(6).reason()).isEqualTo(Reason.DOWN_HOLD);
      assertThat(decisions.get(7).reason()).isEqualTo(Reason.SCALE_DOWN);
      assertThat(decisions.get(8).reason()).isEqualTo(Reason.DOWN_HOLD);
    }

    @Test
    void requiredStaysWithinBounds() {
      var planner = new Planner(SETTINGS, PROFILE);
      Decision flood = planner.decide(T0, prefill(100_000, 1_000_000, 5), 1);
      assertThat(flood.required()).isEqualTo(4);
      assertThat(flood.desired()).isEqualTo(4);
      var idle = replay(new Planner(SETTINGS, PROFILE), 4, List.of(prefill(0, 0, Double.NaN), prefill(0, 0, Double.NaN),
          prefill(0, 0, Double.NaN), prefill(0, 0, Double.NaN), prefill(0, 0, Double.NaN), prefill(0, 0, Double.NaN),
          prefill(0, 0, Double.NaN)));
      assertThat(desired(idle)).containsExactly(4, 4, 4, 4, 4, 4, 1);
    }

    @Test
    void aCountOutsideTheBoundsIsBroughtBackAtOnce() {
      var planner = new Planner(SETTINGS, PROFILE);
      Decision d = planner.decide(T0, prefill(1000, 0, 0.1), 9);
      assertThat(d.desired()).isEqualTo(4);
      assertThat(d.reason()).isEqualTo(Reason.OUT_OF_BOUNDS);
      Decision first = planner.decide(T0, StageObservation.empty(Stage.PREFILL, 0), 0);
      assertThat(first.desired()).isEqualTo(1);
      assertThat(first.reason()).isEqualTo(Reason.OUT_OF_BOUNDS);
    }

    @Test
    void withoutAMeasuredIntervalTheCountIsKept() {
      Decision d = new Planner(SETTINGS, PROFILE).decide(T0, StageObservation.empty(Stage.PREFILL, 0), 2);
      assertThat(d.desired()).isEqualTo(2);
      assertThat(d.reason()).isEqualTo(Reason.NO_DATA);
    }
  }

  @Nested
  class Decode {
    @Test
    void concurrencyIsLittlesLawWithTheRunningAndWaitingAsFloor() {
      var planner = new Planner(SETTINGS, PROFILE);
      // 4 req/s × 100 tokens × 50 ms = 20 requests in flight → 3 replicas of 8
      Decision littles = planner.decide(T0, decode(4, 100, 10, 0, 0.04), 3);
      assertThat(littles.demand()).isCloseTo(20, org.assertj.core.api.Assertions.within(1e-9));
      assertThat(littles.required()).isEqualTo(3);
      // a saturated stage: 30 running and waiting count more than the finished requests suggest
      Decision saturated = planner.decide(T0.plusSeconds(10), decode(4, 100, 24, 6, 0.04), 3);
      assertThat(saturated.demand()).isEqualTo(30);
      assertThat(saturated.required()).isEqualTo(4);
    }

    @Test
    void aMissedTargetDespiteThePredictedCapacityRaisesTheCorrection() {
      var planner = new Planner(SETTINGS, PROFILE);
      // 2 replicas for 16 in flight: enough by the profile, yet ITL is 80 ms against 50
      Decision first = planner.decide(T0, decode(1.6, 100, 16, 0, 0.080), 2);
      assertThat(first.correction()).isCloseTo(1.3, org.assertj.core.api.Assertions.within(1e-9)); // 0.5·1 + 0.5·1.6
      assertThat(first.required()).isEqualTo(3);                                                   // ceil(16·1.3/8)
      assertThat(first.desired()).isEqualTo(3);
      // 3 replicas and ITL back at 40 ms: the factor falls back towards 1 (0.5·1.3 + 0.5·0.8 = 1.05)
      Decision second = planner.decide(T0.plusSeconds(10), decode(1.6, 100, 16, 0, 0.040), 3);
      assertThat(second.correction()).isCloseTo(1.05, org.assertj.core.api.Assertions.within(1e-9));
      Decision third = planner.decide(T0.plusSeconds(20), decode(1.6, 100, 16, 0, 0.040), 3);
      assertThat(third.correction()).isEqualTo(1.0);
    }

    @Test
    void aMissWithTooFewReplicasLeavesTheCorrectionAlone() {
      var planner = new Planner(SETTINGS, PROFILE);
      // 24 in flight need 3 replicas; with 1 the miss is explained
      Decision d = planner.decide(T0, decode(2.4, 100, 24, 0, 0.5), 1);
      assertThat(d.correction()).isEqualTo(1.0);
      assertThat(d.required()).isEqualTo(3);
    }

    @Test
    void replicasStillLoadingDoNotCountAsCapacity() {
      var planner = new Planner(SETTINGS, PROFILE);
      // the Deployment is at 3 for 24 in flight, but only 1 pod answered (2 still load their model): ITL is high
      Decision d = planner.decide(T0, decode(1, 2.4, 100, 24, 0, 0.5), 3);
      assertThat(d.correction()).isEqualTo(1.0);
      assertThat(d.desired()).isEqualTo(3);
    }

    @Test
    void theCorrectionIsCappedAtItsMaximum() {
      var planner = new Planner(SETTINGS, PROFILE);
      Decision d = null;
      for (int i = 0; i < 10; i++) d = planner.decide(T0.plusSeconds(10L * i), decode(0.8, 100, 8, 0, 10.0), 4);
      assertThat(d.correction()).isEqualTo(4.0);
    }
  }

  @Test
  void theStagesAreDampedApart() {
    var planner = new Planner(SETTINGS, PROFILE);
    assertThat(planner.decide(T0, prefill(3500, 0, 0.3), 1).desired()).isEqualTo(2);
    // decode's first scale-up is not held by prefill's cool-down
    assertThat(planner.decide(T0.plusSeconds(10), decode(4, 100, 10, 0, 0.04), 1).desired()).isEqualTo(3);
  }
}
