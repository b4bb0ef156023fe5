package io.moemesh.kvstore;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.moemesh.proto.kvstore.v1.ExtendLeaseRequest;
import io.moemesh.proto.kvstore.v1.ExtendLeaseResponse;
import io.moemesh.proto.kvstore.v1.GetRequest;
import io.moemesh.proto.kvstore.v1.GetResponse;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.kvstore.v1.LookupPrefixRequest;
import io.moemesh.proto.kvstore.v1.LookupPrefixResponse;
import io.moemesh.proto.kvstore.v1.PutFrame;
import io.moemesh.proto.kvstore.v1.PutResponse;
import io.moemesh.proto.kvstore.v1.ReleaseRequest;
import io.moemesh.proto.kvstore.v1.ReleaseResponse;
import io.moemesh.proto.kvstore.v1.StatsRequest;
import io.moemesh.proto.kvstore.v1.StatsResponse;
import io.quarkus.grpc.GrpcService;
import java.time.Instant;
import java.util.function.Supplier;

/**
 * The gRPC adapter of {@link KvObjectStore}: converts messages, maps {@link KvStoreException} onto statuses
 * of the same name, and owns the threading. It uses grpc-java's observer API rather than Mutiny because the
 * two streams need transport flow control (the Mutiny server bridge requests unbounded demand): Put asks for
 * one frame at a time ({@link PutStreamHandler}), Get writes while the transport is ready ({@link GetStreamer}).
 * Both copy rows on the {@link CopyExecutor}. The unary calls touch metadata only, under the store's short
 * lock, so they run on the event loop.
 */
@GrpcService
public class KvStoreGrpcService extends KvStoreGrpc.KvStoreImplBase {
  private final KvObjectStore store;
  private final KvStoreMetrics metrics;
  private final CopyExecutor executor;
  private final long getFrameBytes;

  KvStoreGrpcService(KvObjectStore store, KvStoreMetrics metrics, CopyExecutor executor, KvStoreConfig config) {
    this.store = store;
    this.metrics = metrics;
    this.executor = executor;
    this.getFrameBytes = config.getFrameBytes().asLongValue();
  }

  @Override
  public StreamObserver<PutFrame> put(StreamObserver<PutResponse> responses) {
    return new PutStreamHandler(store, metrics, executor, (ServerCallStreamObserver<PutResponse>) responses);
  }

  @Override
  public void get(GetRequest request, StreamObserver<GetResponse> responses) {
    ObjectReader reader;
    try {
      reader = request.getPrefixTokens() == 0 ? store.get(request.getKey()) : store.readPrefix(request.getKey(), request.getPrefixTokens());
    } catch (RuntimeException e) {
      responses.onError(ProtoMapping.status(e));
      return;
    }
    KvSpans.ofCall().setAttribute(KvSpans.OBJECT_KEY, request.getKey()).setAttribute(KvSpans.BYTES, reader.streamedBytes());
    new GetStreamer(reader, (ServerCallStreamObserver<GetResponse>) responses, executor, metrics, getFrameBytes).start();
  }

  @Override
  public void extendLease(ExtendLeaseRequest request, StreamObserver<ExtendLeaseResponse> responses) {
    unary(responses, () -> {
      Instant end = store.extendLease(request.getKey(), ProtoMapping.duration(request.hasTtl(), request.getTtl()));
      return ExtendLeaseResponse.newBuilder().setLeaseExpireTime(ProtoMapping.timestamp(end)).build();
    });
  }

  @Override
  public void release(ReleaseRequest request, StreamObserver<ReleaseResponse> responses) {
    unary(responses, () -> {
      store.release(request.getKey());
      return ReleaseResponse.getDefaultInstance();
    });
  }

  @Override
  public void lookupPrefix(LookupPrefixRequest request, StreamObserver<LookupPrefixResponse> responses) {
    unary(responses, () -> {
      long[] hashes = request.getPageHashesList().stream().mapToLong(Long::longValue).toArray();
      return store.lookupPrefix(hashes)
          .map(m -> LookupPrefixResponse.newBuilder().setKey(m.key()).setMatchedPages(m.matchedPages())
              .setMatchedTokens(m.matchedTokens()).setGettable(m.gettable()).build())
          .orElse(LookupPrefixResponse.getDefaultInstance());
    });
  }

  @Override
  public void stats(StatsRequest request, StreamObserver<StatsResponse> responses) {
    unary(responses, () -> {
      KvObjectStore.Stats s = store.stats();
      return StatsResponse.newBuilder().setMaxBytes(s.maxBytes()).setUsedBytes(s.usedBytes()).setWritingBytes(s.writingBytes())
          .setWritingObjects(s.writingObjects()).setLiveObjects(s.liveObjects()).setEvictableObjects(s.evictableObjects())
          .setPinnedObjects(s.pinnedObjects()).setEvictionsTotal(s.evictionsTotal()).setExpiredTotal(s.expiredTotal())
          .setAbandonedPutsTotal(s.abandonedPutsTotal()).build();
    });
  }

  private static <T> void unary(StreamObserver<T> responses, Supplier<T> call) {
    T reply;
    try {
      reply = call.get();
    } catch (RuntimeException e) {
      responses.onError(ProtoMapping.status(e));
      return;
    }
    responses.onNext(reply);
    responses.onCompleted();
  }
}
