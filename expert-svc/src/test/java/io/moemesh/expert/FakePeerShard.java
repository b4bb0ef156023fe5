package io.moemesh.expert;

import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.moemesh.proto.expert.v1.ExpertLoadReport;
import io.moemesh.proto.expert.v1.ExpertLoadRequest;
import io.moemesh.proto.expert.v1.ExpertRole;
import io.moemesh.proto.expert.v1.ExpertServiceInfo;
import io.moemesh.proto.expert.v1.ExpertsGrpc;
import io.moemesh.proto.expert.v1.InfoRequest;
import io.moemesh.proto.expert.v1.PlacementTable;
import io.moemesh.proto.expert.v1.PrepareResponse;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Routed shard 1 of 2 as a bare gRPC server in the test JVM: it answers Info and Load (no tokens) and records
 * the placements it is asked to prepare, refusing them while {@link #failPrepare} is set. The service under test
 * is shard 0 and runs the balancer over itself and this shard. (Its methods are bound by hand: Quarkus would take
 * an {@code ExpertsImplBase} subclass in the test sources for the service under test.)
 */
public class FakePeerShard implements QuarkusTestResourceLifecycleManager {
  static final List<PlacementTable> prepared = new CopyOnWriteArrayList<>();
  static volatile boolean failPrepare;
  private static volatile long version;
  private Server server;

  @Override
  public Map<String, String> start() {
    try {
      var service = ServerServiceDefinition.builder(ExpertsGrpc.getServiceDescriptor())
          .addMethod(ExpertsGrpc.getInfoMethod(), ServerCalls.asyncUnaryCall(this::info))
          .addMethod(ExpertsGrpc.getLoadMethod(), ServerCalls.asyncUnaryCall(this::load))
          .addMethod(ExpertsGrpc.getPrepareMethod(), ServerCalls.asyncUnaryCall(this::prepare))
          .addMethod(ExpertsGrpc.getDispatchMethod(), ServerCalls.asyncBidiStreamingCall(answers -> {
            throw Status.UNIMPLEMENTED.asRuntimeException();
          }))
          .addMethod(ExpertsGrpc.getSharedMethod(), ServerCalls.asyncBidiStreamingCall(answers -> {
            throw Status.UNIMPLEMENTED.asRuntimeException();
          }))
          .build();
      server = ServerBuilder.forPort(0).addService(service).build().start();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return Map.of("moemesh.expert.peers", "localhost:19501,localhost:" + server.getPort());
  }

  @Override
  public void stop() {
    if (server != null) server.shutdownNow();
  }

  void info(InfoRequest request, StreamObserver<ExpertServiceInfo> answer) {
    answer.onNext(ExpertServiceInfo.newBuilder().setRole(ExpertRole.EXPERT_ROLE_ROUTED).setShard(1).setNumShards(2).setPrecision("int8")
        .setPlacementVersion(version).build());
    answer.onCompleted();
  }

  void load(ExpertLoadRequest request, StreamObserver<ExpertLoadReport> answer) {
    answer.onNext(ExpertLoadReport.newBuilder().setShard(1).build()); // no layers: this shard computed nothing
    answer.onCompleted();
  }

  void prepare(PlacementTable table, StreamObserver<PrepareResponse> answer) {
    prepared.add(table);
    if (failPrepare) {
      answer.onError(Status.RESOURCE_EXHAUSTED.withDescription("out of memory for experts").asRuntimeException());
      return;
    }
    version = table.getVersion();
    answer.onNext(PrepareResponse.newBuilder().setPlacementVersion(table.getVersion()).build());
    answer.onCompleted();
  }
}
