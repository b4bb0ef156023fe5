package io.moemesh.prefill;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.moemesh.engine.KvConnector;
import io.moemesh.proto.common.v1.DType;
import io.moemesh.proto.kvstore.v1.KvLayout;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.kvstore.v1.PutResponse;
import io.moemesh.proto.kvstore.v1.PutStart;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/** The prefill role's side of KV transfer: one put stream to kv-store per exporting request. */
@ApplicationScoped
public class StorePutConnector implements KvConnector {
  @ConfigProperty(name = "moemesh.prefill.kv-store")
  String storeAddress;

  @ConfigProperty(name = "moemesh.prefill.kv-lease", defaultValue = "30s")
  Duration lease;

  private final Map<String, PutSession> sessions = new ConcurrentHashMap<>();
  private volatile ManagedChannel channel;

  /** Opens the object of a request about to be submitted: its key is the request id. */
  void begin(String requestId, KvLayout layout, long[] pageHashes, DType dtype, int bytesPerValue) {
    var start = PutStart.newBuilder().setKey(requestId).setLayout(layout)
        .setLease(com.google.protobuf.Duration.newBuilder().setSeconds(lease.toSeconds()).setNanos(lease.toNanosPart()));
    for (long h : pageHashes) start.addPageHashes(h);
    sessions.put(requestId, new PutSession(KvStoreGrpc.newStub(channel()), start.build(), dtype, bytesPerValue));
  }

  @Override
  public void saveLayer(String requestId, int layerId, int startPosition, byte[] rows) {
    PutSession s = sessions.get(requestId);
    if (s == null) throw new IllegalStateException("no KV object is open for request " + requestId);
    s.layer(layerId, startPosition, rows);
  }

  CompletableFuture<PutResponse> commit(String requestId) {
    PutSession s = sessions.remove(requestId);
    return s == null ? CompletableFuture.failedFuture(new IllegalStateException("no KV object is open for request " + requestId)) : s.commit();
  }

  void revoke(String requestId, String reason) {
    PutSession s = sessions.remove(requestId);
    if (s != null) s.revoke(reason);
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
