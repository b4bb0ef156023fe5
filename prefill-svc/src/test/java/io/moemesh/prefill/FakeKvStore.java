package io.moemesh.prefill;

import io.grpc.Status;
import io.moemesh.proto.kvstore.v1.ExtendLeaseRequest;
import io.moemesh.proto.kvstore.v1.ExtendLeaseResponse;
import io.moemesh.proto.kvstore.v1.GetRequest;
import io.moemesh.proto.kvstore.v1.GetResponse;
import io.moemesh.proto.kvstore.v1.KvStore;
import io.moemesh.proto.kvstore.v1.LookupPrefixRequest;
import io.moemesh.proto.kvstore.v1.LookupPrefixResponse;
import io.moemesh.proto.kvstore.v1.PutFrame;
import io.moemesh.proto.kvstore.v1.PutOutcome;
import io.moemesh.proto.kvstore.v1.PutResponse;
import io.moemesh.proto.kvstore.v1.ReleaseRequest;
import io.moemesh.proto.kvstore.v1.ReleaseResponse;
import io.moemesh.proto.kvstore.v1.StatsRequest;
import io.moemesh.proto.kvstore.v1.StatsResponse;
import io.quarkus.grpc.GrpcService;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.Uni;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A kv-store that records every put frame and release (served by the test app; kv-store itself is tested in its
 * module). An object whose key starts with {@code full-} is refused once its frames are in, as a full store would.
 */
@GrpcService
public class FakeKvStore implements KvStore {
  static final Map<String, List<PutFrame>> FRAMES = new ConcurrentHashMap<>();
  static final java.util.Set<String> RELEASED = ConcurrentHashMap.newKeySet();

  @Override
  public Uni<PutResponse> put(Multi<PutFrame> frames) {
    String[] key = new String[1];
    return frames.onItem().invoke(f -> {
      if (f.hasStart()) key[0] = f.getStart().getKey();
      FRAMES.computeIfAbsent(key[0], k -> new CopyOnWriteArrayList<>()).add(f);
    }).collect().last().invoke(last -> {
      if (key[0].startsWith("full-")) throw Status.RESOURCE_EXHAUSTED.withDescription("fake store full").asRuntimeException();
    }).map(last -> PutResponse.newBuilder().setKey(key[0])
        .setOutcome(last.hasEnd() ? PutOutcome.PUT_OUTCOME_COMMITTED : PutOutcome.PUT_OUTCOME_REVOKED)
        .setLeaseExpireTime(com.google.protobuf.Timestamp.newBuilder().setSeconds(4_000_000_000L)).build());
  }

  @Override
  public Multi<GetResponse> get(GetRequest request) {
    return Multi.createFrom().failure(Status.UNIMPLEMENTED.asRuntimeException());
  }

  @Override
  public Uni<ExtendLeaseResponse> extendLease(ExtendLeaseRequest request) {
    return Uni.createFrom().failure(Status.UNIMPLEMENTED.asRuntimeException());
  }

  @Override
  public Uni<ReleaseResponse> release(ReleaseRequest request) {
    RELEASED.add(request.getKey());
    return Uni.createFrom().item(ReleaseResponse.getDefaultInstance());
  }

  @Override
  public Uni<LookupPrefixResponse> lookupPrefix(LookupPrefixRequest request) {
    return Uni.createFrom().failure(Status.UNIMPLEMENTED.asRuntimeException());
  }

  @Override
  public Uni<StatsResponse> stats(StatsRequest request) {
    return Uni.createFrom().failure(Status.UNIMPLEMENTED.asRuntimeException());
  }
}
