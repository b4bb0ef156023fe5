package io.moemesh.enginehost.experts;

import io.grpc.ManagedChannel;
import io.moemesh.proto.auth.MeshChannels;
import io.grpc.StatusRuntimeException;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.moemesh.engine.experts.DispatchingExperts;
import io.moemesh.model.ExpertWeights;
import io.moemesh.model.ModelConfig;
import io.moemesh.model.moe.Placement;
import io.moemesh.proto.expert.v1.ExpertServiceInfo;
import io.moemesh.proto.expert.v1.ExpertsGrpc;
import io.moemesh.proto.expert.v1.InfoRequest;
import io.moemesh.proto.expert.v1.LayerSlots;
import io.moemesh.proto.expert.v1.PlacementTable;
import io.quarkus.runtime.ShutdownEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jboss.logging.Logger;

/**
 * Keeps this engine (decode or prefill replica) on the placement the experts' coordinator publishes
 * ({@code ExpertServiceInfo.active_placement}): every {@code moemesh.experts.placement-poll} (1s) it asks every routed
 * shard at once (the coordinator is the lowest-numbered live shard, so a lost shard 0 leaves it reachable), off the
 * engine's thread, and hands the highest newer version any shard publishes to {@link DispatchingExperts}, which
 * switches at the next forward pass. A shard that does not answer (dead or hung) delays no other's answer. The
 * shards keep the previous placement's experts until the balancer's next change, so a step under way finishes on the
 * old version; results are the same bits under any placement.
 * Metric: {@code moemesh_expert_placement_version} (the version the next forward pass uses; NaN while the engine loads).
 * The engine host {@linkplain #start starts} it at startup and hands it the engine's experts once they are
 * {@linkplain #follow loaded}.
 */
@ApplicationScoped
public class PlacementWatcher {
  private static final Logger LOG = Logger.getLogger(PlacementWatcher.class);
  @Inject MeterRegistry registry;
  private volatile DispatchingExperts experts; // null while the engine loads
  private ScheduledExecutorService timer;
  private java.util.List<ManagedChannel> shards = java.util.List.of();
  private String refused = ""; // why the published placement was last refused, to say so once

  /** Starts polling {@code settings}' routed shards every {@code poll} (with routed=remote; else nothing to watch). */
  public void start(ExpertsSettings settings, Duration poll) {
    if (!settings.routedRemote()) return;
    shards = settings.shards().stream().map(PlacementWatcher::channel).toList();
    Gauge.builder("moemesh_expert_placement_version", this, PlacementWatcher::versionInUse)
        .description("Placement version of the routed experts the next forward pass uses").register(registry);
    timer = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("placement-watch").daemon().factory());
    timer.scheduleWithFixedDelay(() -> poll(poll), poll.toMillis(), poll.toMillis(), TimeUnit.MILLISECONDS);
  }

  void stop(@Observes ShutdownEvent event) {
    if (timer != null) timer.shutdownNow();
    shards.forEach(ManagedChannel::shutdownNow);
  }

  /** From now on, switches {@code loaded} (the running engine's remote experts) to newer placements. */
  public void follow(DispatchingExperts loaded) {
    experts = loaded;
  }

  private double versionInUse() {
    DispatchingExperts e = experts;
    return e == null ? Double.NaN : e.placement().version();
  }

  private void poll(Duration deadline) {
    DispatchingExperts experts = this.experts;
    if (experts == null) return; // still loading
    for (ManagedChannel shard : shards)
      ExpertsGrpc.newStub(shard).withDeadlineAfter(Math.max(deadline.toMillis(), 1000), TimeUnit.MILLISECONDS)
          .info(InfoRequest.getDefaultInstance(), new io.grpc.stub.StreamObserver<>() {
            @Override
            public void onNext(ExpertServiceInfo info) {
              offer(experts, info);
            }

            @Override
            public void onError(Throwable t) {
              shard.resetConnectBackoff(); // a restarted shard is asked at once next time
              LOG.debugf("experts: a routed shard did not answer Info: %s", t.getMessage());
            }

            @Override
            public void onCompleted() {}
          });
  }

  /** Switches to the placement {@code info} publishes if it is newer than the one in use (answers arrive on gRPC threads). */
  private synchronized void offer(DispatchingExperts experts, ExpertServiceInfo info) {
    try {
      Placement current = experts.placement();
      newer(info, current).ifPresent(next -> {
        experts.usePlacement(next);
        LOG.infof("experts: placement version %d from the next step on (was %d; published by routed shard %d)", next.version(),
            current.version(), info.getShard());
      });
    } catch (IllegalArgumentException e) {
      if (!refused.equals(e.getMessage())) LOG.warnf("experts: the published placement does not fit this engine: %s", e.getMessage());
      refused = e.getMessage();
    } catch (RuntimeException e) {
      LOG.error("experts: placement poll failed", e); // the next poll tries again
    }
  }

  /**
   * The placement {@code info} publishes if it is newer than {@code current}; an IllegalArgumentException if it
   * does not fit the engine (other shards, experts or MoE layers).
   */
  static Optional<Placement> newer(ExpertServiceInfo info, Placement current) {
    if (!info.hasActivePlacement() || info.getActivePlacement().getVersion() <= current.version()) return Optional.empty();
    return Optional.of(fitting(info.getActivePlacement(), current.numLayers(), current));
  }

  /**
   * Asks every routed shard once for the placement published (a replica starting after a rebalance or a failover
   * begins with it): the highest version any publishes; empty if none publishes or answers (then the poll catches up).
   */
  public static Optional<Placement> active(ExpertsSettings settings, ModelConfig model) {
    Placement start = ExpertWeights.initialPlacement(model, settings.shards().size(), settings.redundantSlots());
    Optional<Placement> newest = Optional.empty();
    for (String address : settings.shards()) {
      ManagedChannel channel = channel(address);
      try {
        ExpertServiceInfo info = ExpertsGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS).info(InfoRequest.getDefaultInstance());
        if (info.hasActivePlacement() && info.getActivePlacement().getVersion() > newest.map(Placement::version).orElse(-1L))
          newest = Optional.of(fitting(info.getActivePlacement(), start.numLayers(), start));
      } catch (StatusRuntimeException e) {
        LOG.warnf("experts: routed shard at %s did not say its placement (%s)", address, e.getStatus());
      } finally {
        channel.shutdownNow();
      }
    }
    if (newest.isEmpty()) LOG.warnf("experts: no routed shard published a placement; starting on the initial one");
    return newest;
  }

  /** {@code table} as a placement over {@code numLayers} layer ids, checked against {@code like}'s shape. */
  private static Placement fitting(PlacementTable table, int numLayers, Placement like) {
    int[][] map = new int[numLayers][];
    for (LayerSlots l : table.getLayersList()) {
      if (l.getLayerId() < 0 || l.getLayerId() >= numLayers || map[l.getLayerId()] != null)
        throw new IllegalArgumentException("version " + table.getVersion() + " has a bad or repeated layer id " + l.getLayerId());
      map[l.getLayerId()] = l.getPhysicalToLogicalList().stream().mapToInt(Integer::intValue).toArray();
    }
    Placement p = Placement.of(table.getVersion(), table.getNumShards(), table.getNumExperts(), map);
    if (table.getSlotToShardCount() > 0) // slots of a lost shard hosted on live ones
      p = p.hostedOn(table.getSlotToShardList().stream().mapToInt(Integer::intValue).toArray(), table.getVersion());
    if (p.numShards() != like.numShards() || p.numExperts() != like.numExperts() || p.numSlots() != like.numSlots())
      throw new IllegalArgumentException("version " + p.version() + " spans " + p.numShards() + " shards × " + p.numSlots() + " slots of "
          + p.numExperts() + " experts; this engine " + like.numShards() + " × " + like.numSlots() + " of " + like.numExperts());
    for (int layer = 0; layer < numLayers; layer++)
      if (p.isMoeLayer(layer) != like.isMoeLayer(layer))
        throw new IllegalArgumentException("version " + p.version() + (p.isMoeLayer(layer) ? " places" : " lacks") + " layer " + layer);
    return p;
  }

  private static ManagedChannel channel(String address) {
    return MeshChannels.builder(address).maxInboundMessageSize(64 << 20).build();
  }
}
