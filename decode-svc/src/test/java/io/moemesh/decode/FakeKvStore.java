package io.moemesh.decode;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.moemesh.proto.common.v1.DType;
import io.moemesh.proto.common.v1.Tensor;
import io.moemesh.proto.kvstore.v1.ExtendLeaseRequest;
import io.moemesh.proto.kvstore.v1.ExtendLeaseResponse;
import io.moemesh.proto.kvstore.v1.GetRequest;
import io.moemesh.proto.kvstore.v1.GetResponse;
import io.moemesh.proto.kvstore.v1.KvLayout;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.kvstore.v1.LayerRows;
import io.moemesh.proto.kvstore.v1.ObjectInfo;
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
 * A kv-store served by the test app (kv-store itself is tested in its module), at {@link #ADDRESS}. An object
 * {@link #hold held} is served in the tiny model's layout, one frame per layer; a Get of a key marked to
 * {@link #hang} never answers (as a stuck store would) and records whether the caller cancelled it; any other key
 * is NOT_FOUND. Every ExtendLease and Release is recorded.
 */
@GrpcService
public class FakeKvStore extends KvStoreGrpc.KvStoreImplBase {
  static final String ADDRESS = "localhost:19301";
  static final int NUM_LAYERS = 3, LATENT_DIM = 40, ROW_BYTES = LATENT_DIM * 2; // tiny, BF16

  /** An ExtendLease as received. */
  record Extension(String key, java.time.Duration ttl, Instant at) {}

  static final Map<String, Integer> TOKENS = new ConcurrentHashMap<>();
  static final Set<String> HANGING = ConcurrentHashMap.newKeySet();
  static final Map<String, Boolean> GETS_CANCELLED = new ConcurrentHashMap<>(); // of hanging keys: false while the Get is open
  static final List<Extension> EXTENSIONS = new CopyOnWriteArrayList<>();
  static final Set<String> RELEASED = ConcurrentHashMap.newKeySet();

  static void hold(String key, int numTokens) {
    TOKENS.put(key, numTokens);
  }

  static void hang(String key) {
    HANGING.add(key);
  }

  static List<Extension> extensionsOf(String key) {
    return EXTENSIONS.stream().filter(e -> e.key().equals(key)).toList();
  }

  @Override
  public void get(GetRequest request, StreamObserver<GetResponse> responses) {
    String key = request.getKey();
    if (HANGING.contains(key)) {
      GETS_CANCELLED.put(key, false);
      ((ServerCallStreamObserver<GetResponse>) responses).setOnCancelHandler(() -> GETS_CANCELLED.put(key, true));
      return;
    }
    Integer numTokens = TOKENS.get(key);
    if (numTokens == null) {
      responses.onError(Status.NOT_FOUND.withDescription("no object " + key).asRuntimeException());
      return;
    }
    var layout = KvLayout.newBuilder().setNumLayers(NUM_LAYERS).setNumTokens(numTokens).setLatentDim(LATENT_DIM)
        .setDtype(DType.DTYPE_BF16).setPageSize(16);
    responses.onNext(GetResponse.newBuilder().setInfo(ObjectInfo.newBuilder().setKey(key).setLayout(layout)
        .setBytes((long) NUM_LAYERS * numTokens * ROW_BYTES)).build());
    for (int layer = 0; layer < NUM_LAYERS; layer++) {
      var rows = Tensor.newBuilder().setDtype(DType.DTYPE_BF16).addShape(numTokens).addShape(LATENT_DIM)
          .setData(ByteString.copyFrom(new byte[numTokens * ROW_BYTES]));
      responses.onNext(GetResponse.newBuilder().setLayer(LayerRows.newBuilder().setLayerId(layer).setTokenStart(0).setRows(rows)).build());
    }
    responses.onCompleted();
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
}
