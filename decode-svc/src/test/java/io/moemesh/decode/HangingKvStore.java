package io.moemesh.decode;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.moemesh.proto.kvstore.v1.ExtendLeaseRequest;
import io.moemesh.proto.kvstore.v1.ExtendLeaseResponse;
import io.moemesh.proto.kvstore.v1.GetRequest;
import io.moemesh.proto.kvstore.v1.GetResponse;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.kvstore.v1.ReleaseRequest;
import io.moemesh.proto.kvstore.v1.ReleaseResponse;
import io.quarkus.grpc.GrpcService;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A kv-store that never answers a Get (as a stuck store would), served by the test app: it records each Get and
 * whether the caller cancelled it, every ExtendLease and every Release. (kv-store itself is tested in its module.)
 */
@GrpcService
public class HangingKvStore extends KvStoreGrpc.KvStoreImplBase {
  /** An ExtendLease as received. */
  record Extension(String key, java.time.Duration ttl, Instant at) {}

  static final Map<String, Boolean> GETS_CANCELLED = new ConcurrentHashMap<>(); // by key: false while the Get is open
  static final List<Extension> EXTENSIONS = new CopyOnWriteArrayList<>();
  static final Set<String> RELEASED = ConcurrentHashMap.newKeySet();

  @Override
  public void get(GetRequest request, StreamObserver<GetResponse> responses) {
    GETS_CANCELLED.put(request.getKey(), false);
    ((ServerCallStreamObserver<GetResponse>) responses).setOnCancelHandler(() -> GETS_CANCELLED.put(request.getKey(), true));
  }

  @Override
  public void extendLease(ExtendLeaseRequest request, StreamObserver<ExtendLeaseResponse> responses) {
    var ttl = java.time.Duration.ofSeconds(request.getTtl().getSeconds(), request.getTtl().getNanos());
    Instant now = Instant.now();
    EXTENSIONS.add(new Extension(request.getKey(), ttl, now));
    Instant end = now.plus(ttl);
    responses.onNext(ExtendLeaseResponse.newBuilder().setLeaseExpireTime(
        com.google.protobuf.Timestamp.newBuilder().setSeconds(end.getEpochSecond()).setNanos(end.getNano())).build());
    responses.onCompleted();
  }

  @Override
  public void release(ReleaseRequest request, StreamObserver<ReleaseResponse> responses) {
    RELEASED.add(request.getKey());
    responses.onNext(ReleaseResponse.getDefaultInstance());
    responses.onCompleted();
  }

  static List<Extension> extensionsOf(String key) {
    return EXTENSIONS.stream().filter(e -> e.key().equals(key)).toList();
  }
}
