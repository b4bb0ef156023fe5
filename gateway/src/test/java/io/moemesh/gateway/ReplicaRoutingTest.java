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
  class Decode {
    @Test
    void picksTheLowestKvUsageThenTheFewestRunning() {
      Replica full = replica(Replica.Role.DECODE, "full", LoadReport.newBuilder().setKvCacheUsage(0.9).build());
      Replica crowded = replica(Replica.Role.DECODE, "crowded",
          LoadReport.newBuilder().setKvCacheUsage(0.2).setNumRunning(30).build());
      Replica calm = replica(Replica.Role.DECODE, "calm",
          LoadReport.newBuilder().setKvCacheUsage(0.2).setNumRunning(3).build());
      assertThat(Replicas.mostRoom(List.of(full, crowded, calm))).contains(calm);
      calm.started(0);
      for (int i = 0; i < 30; i++) calm.started(0);
      assertThat(Replicas.mostRoom(List.of(full, crowded, calm))).contains(crowded);
    }

    @Test
    void aReplicaComesBackWhenItsPollAnswersAgain() {
      Replica r = replica(Replica.Role.DECODE, "flaky", LoadReport.getDefaultInstance());
      r.markUnreachable();
      assertThat(Replicas.mostRoom(List.of(r))).isEmpty();
      assertThat(r.startPoll()).isTrue();
      assertThat(r.startPoll()).as("one poll at a time").isFalse();
      r.polled(LoadReport.getDefaultInstance());
      assertThat(Replicas.mostRoom(List.of(r))).contains(r);
    }
  }
}
