package io.moemesh.gateway;

import io.grpc.stub.StreamObserver;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.kvstore.v1.ReleaseRequest;
import io.moemesh.proto.kvstore.v1.ReleaseResponse;
import io.quarkus.grpc.GrpcService;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** The kv-store the fake prefill's tickets name: records the keys the gateway releases (every other call: UNIMPLEMENTED). */
@GrpcService
public class FakeKvStore extends KvStoreGrpc.KvStoreImplBase {
  static final String ADDRESS = "localhost:19101";
  static final Set<String> RELEASED = ConcurrentHashMap.newKeySet();

  @Override
  public void release(ReleaseRequest request, StreamObserver<ReleaseResponse> responses) {
    RELEASED.add(request.getKey());
    responses.onNext(ReleaseResponse.getDefaultInstance());
    responses.onCompleted();
  }
}
