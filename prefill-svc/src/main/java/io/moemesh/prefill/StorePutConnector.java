package io.moemesh.prefill;

import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.moemesh.engine.KvConnector;
import io.moemesh.enginehost.telemetry.KvTransfer;
import io.moemesh.enginehost.telemetry.KvTransfers;
import io.moemesh.proto.common.v1.DType;
import io.moemesh.proto.kvstore.v1.KvLayout;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.kvstore.v1.PutResponse;
import io.moemesh.proto.kvstore.v1.PutStart;
import io.moemesh.proto.kvstore.v1.ReleaseRequest;
import io.moemesh.proto.kvstore.v1.ReleaseResponse;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/** The prefill role's side of KV transfer: one put stream to kv-store per exporting request. */
@ApplicationScoped
public class StorePutConnector implements KvConnector {
  private static final Logger LOG = Logger.getLogger(StorePutConnector.class);

  @ConfigProperty(name = "moemesh.prefill.kv-store")
  String storeAddress;

  @ConfigProperty(name = "moemesh.prefill.kv-lease", defaultValue = "30s")
  Duration lease;

  @Inject KvTransfers transfers;

  private final Map<String, PutSession> sessions = new ConcurrentHashMap<>();
  private volatile ManagedChannel channel;

  /**
   * Opens the object of a request about to be submitted: its key is the request id. Its {@code kv put} span is a
   * child of the current context (the Prefill call's engine span).
   */
  void begin(String requestId, KvLayout layout, long[] pageHashes, DType dtype, int bytesPerValue) {
    var start = PutStart.newBuilder().setKey(requestId).setLayout(layout)
        .setLease(com.google.protobuf.Duration.newBuilder().setSeconds(lease.toSeconds()).setNanos(lease.toNanosPart()));
    for (long h : pageHashes) start.addPageHashes(h);
    KvTransfer transfer = transfers.put(requestId, storeAddress);
    sessions.put(requestId, new PutSession(KvStoreGrpc.newStub(channel()).withInterceptors(transfer.tracing()), start.build(),
        dtype, bytesPerValue, transfer));
  }

  /**
   * A layer of a request whose object is no longer open is dropped: the request was cancelled while its step ran
   * (the revoke happens on the gRPC thread, the abort only before the next step). Throwing here would fail the
   * whole step and make the engine rerun the batch request by request.
   */
  @Override
  public void saveLayer(String requestId, int layerId, int startPosition, byte[] rows) {
    PutSession s = sessions.get(requestId);
    if (s != null) s.layer(layerId, startPosition, rows);
  }

  CompletableFuture<PutResponse> commit(String requestId) {
    PutSession s = sessions.remove(requestId);
    return s == null ? CompletableFuture.failedFuture(new IllegalStateException("no KV object is open for request " + requestId)) : s.commit();
  }

  void revoke(String requestId, String reason) {
    PutSession s = sessions.remove(requestId);
    if (s != null) s.revoke(reason);
  }

  /**
   * Releases a committed object nobody will fetch (best effort: its lease would end it anyway), outside the
   * caller's gRPC context (a cancelled Prefill call would cancel it).
   */
  void release(String key) {
    Context.ROOT.run(() -> KvStoreGrpc.newStub(channel()).withDeadlineAfter(10, TimeUnit.SECONDS)
        .release(ReleaseRequest.newBuilder().setKey(key).build(), new StreamObserver<>() {
          @Override
          public void onNext(ReleaseResponse value) {}

          @Override
          public void onError(Throwable t) {
            LOG.warnf("could not release KV object %s: %s", key, Status.fromThrowable(t));
          }

          @Override
          public void onCompleted() {}
        }));
  }

  @Override
  public void load(String requestId, int numTokens, KvSink sink, Consumer<String> done) {
    done.accept("prefill-svc exports KV; it does not import request " + requestId + "'s");
  }

  String storeAddress() {
    return storeAddress;
  }

  private ManagedChannel channel() {
    if (channel == null) {
      synchronized (this) {
        if (channel == null) channel = ManagedChannelBuilder.forTarget(storeAddress).usePlaintext().build();
      }
    }
    return channel;
  }

  @PreDestroy
  void close() {
    if (channel != null) channel.shutdownNow();
  }
}
