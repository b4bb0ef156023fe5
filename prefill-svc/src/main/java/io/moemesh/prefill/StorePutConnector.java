package io.moemesh.prefill;

import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.moemesh.proto.auth.MeshChannels;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.moemesh.engine.KvConnector;
import io.moemesh.engine.KvLoadResult;
import io.moemesh.enginehost.telemetry.KvTransfer;
import io.moemesh.enginehost.telemetry.KvTransfers;
import io.moemesh.proto.common.v1.DType;
import io.moemesh.proto.kvstore.v1.KvLayout;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.kvstore.v1.PutResponse;
import io.moemesh.proto.kvstore.v1.PutStart;
import io.moemesh.proto.kvstore.v1.ReleaseRequest;
import io.moemesh.proto.kvstore.v1.ReleaseResponse;
import io.moemesh.proto.kvstore.v1.StatsRequest;
import io.moemesh.proto.kvstore.v1.StatsResponse;
import jakarta.annotation.PostConstruct;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.jboss.logging.Logger;

/**
 * The prefill role's side of KV transfer: one put stream per exporting request, to one of the configured stores
 * ({@code moemesh.prefill.kv-store}: {@code host:port[,host:port…]}, picked by {@link KvStores}, whose figures are
 * polled every {@code moemesh.prefill.kv-store-poll}); and the reads of prompt prefixes the stores already hold
 * ({@link StoredPrefixes}, {@code moemesh.prefill.stored-prefix.*}).
 */
@ApplicationScoped
public class StorePutConnector implements KvConnector {
  private static final Logger LOG = Logger.getLogger(StorePutConnector.class);

  @Inject PrefillConfig config;

  @Inject KvTransfers transfers;

  private final Map<String, PutSession> sessions = new ConcurrentHashMap<>();
  private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();
  private KvStores stores;
  private StoredPrefixes prefixes;
  private ScheduledExecutorService poller;

  @PostConstruct
  void start() {
    stores = new KvStores(KvStores.parse(config.kvStore()), this::stats);
    PrefillConfig.StoredPrefix stored = config.storedPrefix();
    prefixes = new StoredPrefixes(KvStores.parse(config.kvStore()), this::channel, transfers, stored.lookupTimeout(), stored.minTokens());
    if (stores.size() > 1) { // one store is always the pick
      poller = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("kv-store-stats").daemon().factory());
      poller.scheduleWithFixedDelay(stores::refresh, 0, config.kvStorePoll().toMillis(), TimeUnit.MILLISECONDS);
    }
  }

  /**
   * Opens the object of a request about to be submitted in the store it picks, and returns that store's address
   * (the ticket's): the key is the request id. Its {@code kv put} span is a child of the current context (the
   * Prefill call's engine span).
   */
  String begin(String requestId, KvLayout layout, long[] pageHashes, DType dtype, int bytesPerValue) {
    var start = PutStart.newBuilder().setKey(requestId).setLayout(layout)
        .setLease(com.google.protobuf.Duration.newBuilder().setSeconds(config.kvLease().toSeconds())
            .setNanos(config.kvLease().toNanosPart()));
    for (long h : pageHashes) start.addPageHashes(h);
    String store = stores.pick((long) layout.getNumLayers() * layout.getNumTokens() * layout.getLatentDim() * bytesPerValue).address;
    KvTransfer transfer = transfers.put(requestId, store);
    sessions.put(requestId, new PutSession(KvStoreGrpc.newStub(channel(store)).withInterceptors(transfer.tracing()), start.build(),
        dtype, bytesPerValue, transfer));
    return store;
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
  void release(String store, String key) {
    Context.ROOT.run(() -> KvStoreGrpc.newStub(channel(store)).withDeadlineAfter(10, TimeUnit.SECONDS)
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

  /** The stores' prompt prefixes, or empty when {@code moemesh.prefill.stored-prefix.enabled} is false. */
  Optional<StoredPrefixes> prefixes() {
    return config.storedPrefix().enabled() ? Optional.of(prefixes) : Optional.empty();
  }

  /** Prefill role: loads a request's stored prefix ({@link StoredPrefixes#load}). */
  @Override
  public void load(String requestId, int numTokens, KvSink sink, Consumer<KvLoadResult> done) {
    prefixes.load(requestId, numTokens, sink, done);
  }

  private Optional<StatsResponse> stats(String store) {
    try {
      return Optional.of(KvStoreGrpc.newBlockingStub(channel(store)).withDeadlineAfter(Math.max(config.kvStorePoll().toMillis(), 500), TimeUnit.MILLISECONDS)
          .stats(StatsRequest.getDefaultInstance()));
    } catch (StatusRuntimeException e) {
      LOG.debugf("kv-store %s did not answer Stats: %s", store, e.getStatus());
      channel(store).resetConnectBackoff();
      return Optional.empty();
    }
  }

  private ManagedChannel channel(String store) {
    return channels.computeIfAbsent(store, a -> MeshChannels.builder(a).build());
  }

  @PreDestroy
  void close() {
    if (poller != null) poller.shutdownNow();
    channels.values().forEach(ManagedChannel::shutdownNow);
  }
}
