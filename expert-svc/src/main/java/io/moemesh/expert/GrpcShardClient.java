package io.moemesh.expert;

import io.grpc.ManagedChannel;
import io.moemesh.proto.auth.MeshChannels;
import io.grpc.StatusRuntimeException;
import io.moemesh.proto.expert.v1.ExpertLoadReport;
import io.moemesh.proto.expert.v1.ExpertLoadRequest;
import io.moemesh.proto.expert.v1.ExpertServiceInfo;
import io.moemesh.proto.expert.v1.ExpertsGrpc;
import io.moemesh.proto.expert.v1.InfoRequest;
import io.moemesh.proto.expert.v1.PlacementTable;
import io.moemesh.proto.expert.v1.PrepareResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A routed shard over gRPC: Info and Load with a short deadline, Prepare (which loads weights) with a long one, and
 * heartbeats (Info) with the failover's, shorter still.
 */
final class GrpcShardClient implements ShardClient {
  private final String name;
  private final ManagedChannel channel;
  private final Duration prepareTimeout, callTimeout, heartbeatTimeout;

  GrpcShardClient(int shard, String address, Duration prepareTimeout) {
    this(shard, address, prepareTimeout, prepareTimeout.dividedBy(10));
  }

  GrpcShardClient(int shard, String address, Duration prepareTimeout, Duration heartbeatTimeout) {
    this.name = "routed shard " + shard + " at " + address;
    this.channel = MeshChannels.builder(address).maxInboundMessageSize(64 << 20).build();
    this.prepareTimeout = prepareTimeout;
    this.callTimeout = prepareTimeout.dividedBy(10);
    this.heartbeatTimeout = heartbeatTimeout;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public ExpertServiceInfo info() {
    return call(() -> stub(callTimeout).info(InfoRequest.getDefaultInstance()));
  }

  @Override
  public ExpertServiceInfo heartbeat() {
    return call(() -> stub(heartbeatTimeout).info(InfoRequest.getDefaultInstance()));
  }

  @Override
  public ExpertLoadReport load() {
    return call(() -> stub(callTimeout).load(ExpertLoadRequest.getDefaultInstance()));
  }

  @Override
  public PrepareResponse prepare(PlacementTable placement) {
    return call(() -> stub(prepareTimeout).prepare(placement));
  }

  private ExpertsGrpc.ExpertsBlockingStub stub(Duration deadline) {
    return ExpertsGrpc.newBlockingStub(channel).withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS);
  }

  private <T> T call(java.util.function.Supplier<T> rpc) {
    try {
      return rpc.get();
    } catch (StatusRuntimeException e) {
      channel.resetConnectBackoff(); // a restarted shard is tried at once next time
      throw new IllegalStateException(name + ": " + MeshChannels.describe(e.getStatus()), e);
    }
  }

  @Override
  public void close() {
    channel.shutdownNow();
  }
}
