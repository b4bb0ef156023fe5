package io.moemesh.expert;

import static io.moemesh.expert.PlacementCoordinatorTest.EXPERTS;
import static io.moemesh.expert.PlacementCoordinatorTest.INITIAL;
import static io.moemesh.expert.PlacementCoordinatorTest.MOE;
import static io.moemesh.expert.PlacementCoordinatorTest.SHARDS;

import io.moemesh.model.moe.Placement;
import io.moemesh.proto.expert.v1.ExpertLoadReport;
import io.moemesh.proto.expert.v1.ExpertRole;
import io.moemesh.proto.expert.v1.ExpertServiceInfo;
import io.moemesh.proto.expert.v1.LayerLoad;
import io.moemesh.proto.expert.v1.PlacementInUse;
import io.moemesh.proto.expert.v1.PlacementTable;
import io.moemesh.proto.expert.v1.PrepareResponse;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** A routed shard's placement bookkeeping as {@link ExpertHost} keeps it. */
final class FakeShard implements ShardClient {
  final int index;
  final List<PlacementTable> prepared = new ArrayList<>();
  final List<Long> activeWhenPrepared = new ArrayList<>();
  Placement previous, newest = INITIAL;
  long[] tokens = new long[EXPERTS];
  List<PlacementInUse> inUse = List.of();
  boolean down, failPrepare;
  volatile java.util.concurrent.CountDownLatch hung; // set: heartbeats get no answer until it opens (SIGSTOP, then SIGCONT)
  int answersAs;
  java.util.function.Supplier<Placement> publishes = () -> null; // the coordinator on this shard, if any: its active placement
  java.util.function.Supplier<Placement> coordinatorActive = () -> INITIAL; // the test's coordinator's, when prepared

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
    var b = ExpertServiceInfo.newBuilder().setRole(ExpertRole.EXPERT_ROLE_ROUTED).setShard(answersAs).setNumShards(SHARDS)
        .setPlacementVersion(newest.version()).setPreparedPlacement(PlacementTables.toProto(newest));
    Placement published = publishes.get();
    if (published != null) b.setActivePlacement(PlacementTables.toProto(published));
    return b.build();
  }

  @Override
  public ExpertServiceInfo heartbeat() {
    var h = hung;
    if (h != null) {
      try {
        h.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return info();
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
    activeWhenPrepared.add(coordinatorActive.get().version());
    if (next.version() <= newest.version()) throw new IllegalStateException("version " + next.version() + " is not above " + newest.version());
    previous = newest;
    newest = next;
    return PrepareResponse.newBuilder().setPlacementVersion(next.version()).build();
  }

  /** A shard as one peer sees it: {@code cut} makes every call fail, as a network partition between those two would. */
  static final class Cut implements ShardClient {
    final ShardClient shard;
    volatile boolean cut;

    Cut(ShardClient shard) {
      this.shard = shard;
    }

    private void check() {
      if (cut) throw new IllegalStateException(shard.name() + " is unreachable from here");
    }

    @Override
    public String name() {
      return shard.name();
    }

    @Override
    public ExpertServiceInfo info() {
      check();
      return shard.info();
    }

    @Override
    public ExpertLoadReport load() {
      check();
      return shard.load();
    }

    @Override
    public PrepareResponse prepare(PlacementTable placement) {
      check();
      return shard.prepare(placement);
    }
  }
}
