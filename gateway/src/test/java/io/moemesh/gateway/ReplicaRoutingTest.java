package io.moemesh.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.proto.common.v1.LoadReport;
import java.util.List;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The routing choice over load reports, without channels or a poller. */
class ReplicaRoutingTest {

  private static Replica replica(Replica.Role role, String name, LoadReport load) {
    Replica r = new Replica(role, name, null);
    r.startPoll();
    r.polled(load);
    return r;
  }

  @Nested
  class Prefill {
    @Test
    void picksTheFewestQueuedPromptTokens() {
      Replica busy = replica(Replica.Role.PREFILL, "busy", LoadReport.newBuilder().setQueuedPromptTokens(900).build());
      Replica idle = replica(Replica.Role.PREFILL, "idle", LoadReport.newBuilder().setQueuedPromptTokens(100).build());
      assertThat(Replicas.leastQueued(List.of(busy, idle))).contains(idle);
    }

    @Test
    void countsPromptTokensSentSinceTheLastReport() {
      Replica a = replica(Replica.Role.PREFILL, "a", LoadReport.newBuilder().setQueuedPromptTokens(100).build());
      Replica b = replica(Replica.Role.PREFILL, "b", LoadReport.newBuilder().setQueuedPromptTokens(300).build());
      a.started(500);
      assertThat(Replicas.leastQueued(List.of(a, b))).contains(b);
      a.ended(500);
      assertThat(Replicas.leastQueued(List.of(a, b))).contains(a);
    }

    @Test
    void skipsUnreachableAndIsEmptyWithoutAny() {
      Replica down = replica(Replica.Role.PREFILL, "down", LoadReport.getDefaultInstance());
      down.markUnreachable();
      Replica never = new Replica(Replica.Role.PREFILL, "never polled", null);
      assertThat(Replicas.leastQueued(List.of(down, never))).isEmpty();
      assertThat(Replicas.leastQueued(List.of())).isEmpty();
    }
  }

  @Nested
  class PrefixRouting {
    final PrefixAffinity affinity = new PrefixAffinity(4, 64, 100);

    static int[] prompt(int... tokens) {
      return tokens;
    }

    static int[] range(int from, int count) {
      return java.util.stream.IntStream.range(from, from + count).toArray();
    }

    static int[] concat(int[] a, int[] b) {
      int[] c = java.util.Arrays.copyOf(a, a.length + b.length);
      System.arraycopy(b, 0, c, a.length, b.length);
      return c;
    }

    Replica prefill(String name, long queued) {
      return replica(Replica.Role.PREFILL, name, LoadReport.newBuilder().setQueuedPromptTokens(queued).build());
    }

    @Test
    void aSharedPrefixGoesWhereItWasComputedThoughAnotherReplicaIsLessLoaded() {
      Replica a = prefill("a", 0), b = prefill("b", 50);
      int[] system = range(1000, 12); // three blocks of 4
      var first = affinity.pick(List.of(b, a), concat(system, range(1, 5))).orElseThrow();
      assertThat(first.replica()).isEqualTo(a);
      assertThat(first.reason()).isEqualTo(PrefixAffinity.Reason.LOAD);
      assertThat(first.matchedTokens()).isZero();
      a.started(60); // now a has more queued than b, within the margin of 100
      var second = affinity.pick(List.of(b, a), concat(system, range(7, 9))).orElseThrow();
      assertThat(second.replica()).isEqualTo(a);
      assertThat(second.reason()).isEqualTo(PrefixAffinity.Reason.PREFIX);
      assertThat(second.matchedTokens()).as("the three system blocks, not the differing tail").isEqualTo(12);
    }

    @Test
    void loadWinsBeyondTheMargin() {
      Replica a = prefill("a", 0), b = prefill("b", 0);
      int[] system = range(2000, 8);
      assertThat(affinity.pick(List.of(a, b), system).orElseThrow().replica()).isEqualTo(a);
      a.started(101);
      var choice = affinity.pick(List.of(a, b), system).orElseThrow();
      assertThat(choice.replica()).isEqualTo(b);
      assertThat(choice.reason()).isEqualTo(PrefixAffinity.Reason.LOAD);
      a.ended(101);
      assertThat(affinity.pick(List.of(a, b), system).orElseThrow().replica()).as("b now holds it too; the tie goes to the least queued")
          .isIn(a, b);
    }

    @Test
    void matchesOnlyWholeLeadingBlocksOfTheChain() {
      Replica a = prefill("a", 0), b = prefill("b", 0);
      affinity.pick(List.of(a, b), range(0, 12));
      b.started(5); // b is now the least queued: only a known prefix sends a prompt to a
      a.started(10);
      assertThat(affinity.pick(List.of(a, b), prompt(0, 1, 2, 3, 4, 5, 6, 99, 8, 9, 10, 11)).orElseThrow().matchedTokens())
          .as("block 2 differs, so block 3 does not count either").isEqualTo(4);
      assertThat(affinity.pick(List.of(a, b), prompt(9, 1, 2, 3, 4, 5, 6, 7)).orElseThrow().reason())
          .as("a different first token: nothing known").isEqualTo(PrefixAffinity.Reason.LOAD);
      assertThat(affinity.pick(List.of(a, b), prompt(0, 1, 2)).orElseThrow().matchedTokens()).as("no whole block").isZero();
    }

    @Test
    void forgetsTheLeastRecentlyUsedBlocksAndSkipsUnreachableReplicas() {
      var small = new PrefixAffinity(4, 2, 1000);
      Replica a = prefill("a", 0), b = prefill("b", 1);
      small.pick(List.of(a, b), range(0, 8)); // a: 2 blocks
      small.pick(List.of(a, b), range(100, 8)); // a: 2 other blocks; the first two forgotten
      assertThat(small.pick(List.of(a, b), range(0, 8)).orElseThrow().reason()).isEqualTo(PrefixAffinity.Reason.LOAD);
      assertThat(small.pick(List.of(a, b), range(0, 8)).orElseThrow().matchedTokens()).as("remembered again").isEqualTo(8);
      a.markUnreachable();
      assertThat(small.pick(List.of(a, b), range(0, 8)).orElseThrow().replica()).isEqualTo(b);
      b.markUnreachable();
      assertThat(small.pick(List.of(a, b), range(0, 8))).isEmpty();
    }

    @Test
    void rejectsSettingsThatCannotWork() {
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> new PrefixAffinity(0, 1, 0)).hasMessageContaining("at least one token");
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> new PrefixAffinity(16, 0, 0)).hasMessageContaining("at least one prefix block");
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> new PrefixAffinity(16, 1, -1)).hasMessageContaining("at least 0 tokens");
    }
  }

  @Nested
  class Decode {
    private static Replica decode(String name, double kvUsage, int running) {
      return replica(Replica.Role.DECODE, name, LoadReport.newBuilder().setKvCacheUsage(kvUsage).setNumRunning(running).build());
    }

    @Test
    void aBurstSpreadsEvenBeforeAnyPollReportsIt() {
      Replica a = decode("a", 0.10, 0), b = decode("b", 0.12, 0);
      var random = new java.util.Random(1);
      for (int i = 0; i < 20; i++) Replicas.leastLoaded(List.of(a, b), random).orElseThrow().started(0);
      assertThat(a.decodeStreams()).isEqualTo(10);
      assertThat(b.decodeStreams()).isEqualTo(10);
    }

    @Test
    void streamsTheLastReportCountedBeyondThisGatewaysOwnWeighToo() {
      Replica busy = decode("busy", 0.2, 0), calm = decode("calm", 0.2, 0);
      busy.started(0);
      busy.startPoll();
      busy.polled(LoadReport.newBuilder().setKvCacheUsage(0.3).setNumRunning(6).setNumWaiting(2).build());
      assertThat(busy.decodeStreams()).as("1 of ours + 7 others'").isEqualTo(8);
      busy.ended(0);
      assertThat(busy.decodeStreams()).isEqualTo(7);
      assertThat(Replicas.leastLoaded(List.of(busy, calm), new java.util.Random(2))).contains(calm);
    }

    @Test
    void aReplicaNearlyOutOfKvRoomIsPassedOverWhileAnotherHasRoom() {
      Replica full = decode("full", 0.97, 0), roomy = decode("roomy", 0.5, 40);
      var random = new java.util.Random(3);
      for (int i = 0; i < 10; i++) assertThat(Replicas.leastLoaded(List.of(full, roomy), random)).contains(roomy);
      Replica alsoFull = decode("also-full", 0.99, 5);
      assertThat(Replicas.leastLoaded(List.of(full, alsoFull), random)).as("all full: still the less loaded").contains(full);
    }

    @Test
    void ofManyReplicasTwoRandomOnesAreCompared() {
      List<Replica> pool = java.util.stream.IntStream.range(0, 8).mapToObj(i -> decode("r" + i, 0.1, i)).toList();
      var random = new java.util.Random(4);
      java.util.Map<Replica, Integer> picks = new java.util.HashMap<>();
      for (int i = 0; i < 4000; i++) picks.merge(Replicas.leastLoaded(pool, random).orElseThrow(), 1, Integer::sum);
      assertThat(picks).doesNotContainKey(pool.get(7)).as("the busiest never wins a pair");
      // P(least loaded of a random pair is r_k) = (7 - k) / 28
      for (int k = 0; k < 7; k++) assertThat(picks.get(pool.get(k)) / 4000.0).isCloseTo((7 - k) / 28.0, org.assertj.core.data.Offset.offset(0.03));
    }

    @Test
    void aSlowReplicaStaysInRoutingUntilItMissesThreePollsADeadOneLeavesAtOnce() {
      Replica slow = decode("slow", 0.1, 0);
      for (int miss = 1; miss <= Replica.MAX_MISSED_POLLS; miss++) {
        assertThat(slow.startPoll()).isTrue();
        slow.pollFailed(io.grpc.Status.Code.DEADLINE_EXCEEDED);
        assertThat(slow.reachable()).as("after %d missed polls", miss).isEqualTo(miss < Replica.MAX_MISSED_POLLS);
      }
      slow.startPoll();
      slow.polled(LoadReport.getDefaultInstance());
      slow.startPoll();
      slow.pollFailed(io.grpc.Status.Code.DEADLINE_EXCEEDED);
      assertThat(slow.reachable()).as("an answer resets the count").isTrue();
      Replica dead = decode("dead", 0.1, 0);
      dead.startPoll();
      dead.pollFailed(io.grpc.Status.Code.UNAVAILABLE);
      assertThat(dead.reachable()).isFalse();
    }

    /** A busy replica that missed its polls still serves when its role has no other: better late than a 503. */
    @Test
    void slowReplicasAreALastResortDeadOnesNever() {
      Replica slow = decode("slow", 0.1, 0), dead = decode("dead", 0.1, 0), live = decode("live", 0.9, 40);
      for (int miss = 0; miss < Replica.MAX_MISSED_POLLS; miss++) {
        slow.startPoll();
        slow.pollFailed(io.grpc.Status.Code.DEADLINE_EXCEEDED);
      }
      dead.startPoll();
      dead.pollFailed(io.grpc.Status.Code.UNAVAILABLE);
      var random = new java.util.Random(3);
      assertThat(slow.slow()).isTrue();
      assertThat(dead.slow()).isFalse();
      for (int i = 0; i < 20; i++) assertThat(Replicas.leastLoaded(List.of(slow, dead, live), random)).as("a reachable one first").contains(live);
      assertThat(Replicas.leastLoaded(List.of(slow, dead), random)).contains(slow);
      assertThat(Replicas.leastQueued(List.of(dead, slow))).contains(slow);
      assertThat(Replicas.leastLoaded(List.of(dead), random)).isEmpty();
      slow.markUnreachable(); // a call found it gone
      assertThat(Replicas.leastLoaded(List.of(slow, dead), random)).isEmpty();
    }

    @Test
    void aReplicaComesBackWhenItsPollAnswersAgain() {
      Replica r = replica(Replica.Role.DECODE, "flaky", LoadReport.getDefaultInstance());
      r.markUnreachable();
      assertThat(Replicas.leastLoaded(List.of(r), new java.util.Random(0))).isEmpty();
      assertThat(r.startPoll()).isTrue();
      assertThat(r.startPoll()).as("one poll at a time").isFalse();
      r.polled(LoadReport.getDefaultInstance());
      assertThat(Replicas.leastLoaded(List.of(r), new java.util.Random(0))).contains(r);
    }
  }
}
