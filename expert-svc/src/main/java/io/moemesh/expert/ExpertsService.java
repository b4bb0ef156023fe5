package io.moemesh.expert;

import io.grpc.Status;
import io.moemesh.model.ExpertWeights;
import io.moemesh.model.moe.Placement;
import io.moemesh.proto.expert.v1.CombineFrame;
import io.moemesh.proto.expert.v1.DispatchFrame;
import io.moemesh.proto.expert.v1.ExpertLoadReport;
import io.moemesh.proto.expert.v1.ExpertLoadRequest;
import io.moemesh.proto.expert.v1.ExpertRole;
import io.moemesh.proto.expert.v1.ExpertServiceInfo;
import io.moemesh.proto.expert.v1.Experts;
import io.moemesh.proto.expert.v1.InfoRequest;
import io.moemesh.proto.expert.v1.LayerExperts;
import io.moemesh.proto.expert.v1.LayerLoad;
import io.moemesh.proto.expert.v1.PlacementInUse;
import io.moemesh.proto.expert.v1.PlacementTable;
import io.moemesh.proto.expert.v1.PrepareResponse;
import io.moemesh.proto.expert.v1.SharedFrame;
import io.quarkus.grpc.GrpcService;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.Uni;
import jakarta.inject.Inject;
import java.util.Arrays;

/**
 * The expert service over gRPC: frames of every stream go to the one compute thread and come back in order;
 * a frame that fails answers with an error frame and the stream goes on.
 */
@GrpcService
public class ExpertsService implements Experts {
  @Inject ExpertHost host;
  @Inject BalancerLoop balancer;
  @Inject StepSpans spans;

  @Override
  public Multi<CombineFrame> dispatch(Multi<DispatchFrame> frames) {
    StepSpans.Stream steps = spans.stream(StepSpans.DISPATCH, host.config().shard(), host.executor());
    return frames.map(f -> new Arrived<>(f, System.nanoTime())).emitOn(host.executor()).map(a -> host.routed(a.frame, a.nanos, steps))
        .onTermination().invoke(steps::close);
  }

  @Override
  public Multi<CombineFrame> shared(Multi<SharedFrame> frames) {
    StepSpans.Stream steps = spans.stream(StepSpans.SHARED, -1, host.executor());
    return frames.map(f -> new Arrived<>(f, System.nanoTime())).emitOn(host.executor()).map(a -> host.shared(a.frame, a.nanos, steps))
        .onTermination().invoke(steps::close);
  }

  /** A frame and when it arrived, before it queues for the compute thread. */
  private record Arrived<F>(F frame, long nanos) {}

  @Override
  public Uni<ExpertServiceInfo> info(InfoRequest request) {
    return Uni.createFrom().item(() -> {
      var held = ready().held();
      var c = host.config();
      var b = ExpertServiceInfo.newBuilder().setModel(c.modelDir().getFileName().toString()).setPrecision(c.precision().name().toLowerCase())
          .setNumShards(c.numShards());
      if (held.placement() == null) return b.setRole(ExpertRole.EXPERT_ROLE_SHARED).build();
      b.setRole(ExpertRole.EXPERT_ROLE_ROUTED).setShard(c.shard()).setPlacementVersion(held.placement().version());
      for (int layer = 0; layer < held.placement().numLayers(); layer++)
        if (held.placement().isMoeLayer(layer))
          b.addHeld(LayerExperts.newBuilder().setLayerId(layer)
              .addAllExperts(Arrays.stream(held.placement().expertsOnShard(layer, c.shard())).boxed().toList()));
      b.setPreparedPlacement(PlacementTables.toProto(held.placement()));
      balancer.active().ifPresent(p -> b.setActivePlacement(PlacementTables.toProto(p)));
      return b.build();
    });
  }

  @Override
  public Uni<ExpertLoadReport> load(ExpertLoadRequest request) {
    return Uni.createFrom().item(() -> {
      var load = ready().load();
      long[][] counts = load.snapshot();
      var b = ExpertLoadReport.newBuilder().setShard(host.config().shard()).setWindowSteps(host.config().loadWindow());
      for (int layer = 0; layer < counts.length; layer++)
        if (counts[layer] != null) b.addLayers(LayerLoad.newBuilder().setLayerId(layer).addAllTokensPerExpert(Arrays.stream(counts[layer]).boxed().toList()));
      for (var v : host.placementsInUse())
        b.addPlacementsInUse(PlacementInUse.newBuilder().setPlacementVersion(v.version()).setIdleMillis(v.idleMillis()));
      return b.build();
    });
  }

  @Override
  public Uni<PrepareResponse> prepare(PlacementTable table) {
    return Uni.createFrom().item(() -> {
      Placement next;
      try {
        next = PlacementTables.fromProto(table, ExpertWeights.numLayers(ready().model()));
      } catch (IllegalArgumentException e) {
        throw Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException();
      }
      try {
        int served = ready().prepare(next);
        return PrepareResponse.newBuilder().setPlacementVersion(next.version()).setExpertsLoaded(served).build();
      } catch (IllegalArgumentException e) {
        throw Status.FAILED_PRECONDITION.withDescription(e.getMessage()).asRuntimeException();
      }
    }).runSubscriptionOn(io.smallrye.mutiny.infrastructure.Infrastructure.getDefaultWorkerPool());
  }

  private ExpertHost ready() {
    if (!host.isReady())
      throw Status.UNAVAILABLE.withDescription(host.failure() == null ? "the experts are still loading" : "the experts failed to load: " + host.failure())
          .asRuntimeException();
    return host;
  }
}
