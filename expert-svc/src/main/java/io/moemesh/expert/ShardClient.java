package io.moemesh.expert;

import io.moemesh.proto.expert.v1.ExpertLoadReport;
import io.moemesh.proto.expert.v1.ExpertServiceInfo;
import io.moemesh.proto.expert.v1.PlacementTable;
import io.moemesh.proto.expert.v1.PrepareResponse;

/**
 * One routed shard as the balancer reaches it: gRPC in the mesh ({@link GrpcShardClient}), fakes in tests.
 * Each call blocks until the shard answers and throws a RuntimeException saying why when it does not.
 */
interface ShardClient extends AutoCloseable {
  /** For messages, e.g. "shard 1 at host:port". */
  String name();

  ExpertServiceInfo info();

  /** Info with the failover's short deadline: a shard that does not answer in time misses this heartbeat. */
  default ExpertServiceInfo heartbeat() {
    return info();
  }

  ExpertLoadReport load();

  PrepareResponse prepare(PlacementTable placement);

  @Override
  default void close() {}
}
