package io.moemesh.prefill;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.MoreExecutors;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.moemesh.engine.KvConnector.KvSink;
import io.moemesh.engine.KvLoadResult;
import io.moemesh.enginehost.kv.StoreLoad;
import io.moemesh.enginehost.telemetry.KvTransfer;
import io.moemesh.enginehost.telemetry.KvTransfers;
import io.moemesh.proto.kvstore.v1.GetRequest;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.kvstore.v1.LookupPrefixRequest;
import io.moemesh.proto.kvstore.v1.LookupPrefixResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jboss.logging.Logger;

/**
 * Prompt prefixes another prefill already computed, as a mesh-wide prefix cache (Mooncake's): before a prompt runs,
 * every store is asked at once which object shares the longest run of the prompt's leading pages; the best one
 * becomes the request's {@code Export.prefixTokens}, and if the engine's own cache holds less, the engine's KV load
 * reads those positions from that store (a prefix Get) instead of computing them. A store that does not answer in
 * time counts as holding nothing; a failed read makes the engine compute the prefix. Objects of one model and
 * precision only: the page hashes are seeded with both.
 */
final class StoredPrefixes {
  private static final Logger LOG = Logger.getLogger(StoredPrefixes.class);
  private static final long LOAD_DEADLINE_SECONDS = 60;

  /** A prefix of {@code tokens} positions in object {@code key} of {@code store}. */
  record Found(String store, String key, int tokens) {}

  /** A prefix the engine may load for a request; its Get, once started, is cancelled when the request ends first. */
  private static final class Expected {
    final Found found;
    final io.opentelemetry.context.Context trace;
    ClientCallStreamObserver<GetRequest> get; // guarded by this
    boolean forgotten; // guarded by this

    Expected(Found found, io.opentelemetry.context.Context trace) {
      this.found = found;
      this.trace = trace;
    }

    void started(ClientCallStreamObserver<GetRequest> call) {
      boolean cancel;
      synchronized (this) {
        get = call;
        cancel = forgotten;
      }
      if (cancel) call.cancel("the request ended before its prefix was read", null);
    }

    void forget() {
      ClientCallStreamObserver<GetRequest> call;
      synchronized (this) {
        forgotten = true;
        call = get;
      }
      if (call != null) call.cancel("the request ended before its prefix was read", null); // a finished Get ignores it
    }
  }

  private final List<String> stores;
  private final Function<String, io.grpc.Channel> channels;
  private final KvTransfers transfers;
  private final Duration lookupTimeout;
  private final int minTokens;
  private final Map<String, Expected> expected = new ConcurrentHashMap<>();

  /**
   * @param lookupTimeout how long a prompt waits for the stores' answers (it adds to its time to first token)
   * @param minTokens the shortest prefix worth reading instead of computing
   */
  StoredPrefixes(List<String> stores, Function<String, io.grpc.Channel> channels, KvTransfers transfers, Duration lookupTimeout, int minTokens) {
    this.stores = stores;
    this.channels = channels;
    this.transfers = transfers;
    this.lookupTimeout = lookupTimeout;
    this.minTokens = minTokens;
  }

  /**
   * The longest stored prefix of a prompt with these full-page hashes, at most {@code maxTokens} long and
   * whole pages of {@code pageSize}; never fails (a store that fails or is late holds nothing).
   */
  CompletableFuture<Optional<Found>> find(long[] pageHashes, int pageSize, int maxTokens) {
    int maxPages = Math.min(pageHashes.length, maxTokens / pageSize);
    if (maxPages * pageSize < minTokens) return CompletableFuture.completedFuture(Optional.empty()); // minTokens ≥ 1
    var request = LookupPrefixRequest.newBuilder();
    for (int p = 0; p < maxPages; p++) request.addPageHashes(pageHashes[p]);
    List<CompletableFuture<Optional<Found>>> answers = stores.stream().map(s -> lookup(s, request.build(), pageSize)).toList();
    return CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new)).thenApply(all -> answers.stream().map(CompletableFuture::join)
        .flatMap(Optional::stream).filter(f -> f.tokens() >= minTokens)
        .max(java.util.Comparator.comparingInt(Found::tokens)));
  }

  private CompletableFuture<Optional<Found>> lookup(String store, LookupPrefixRequest request, int pageSize) {
    var answer = new CompletableFuture<Optional<Found>>();
    var call = KvStoreGrpc.newFutureStub(channels.apply(store)).withDeadlineAfter(lookupTimeout.toMillis(), TimeUnit.MILLISECONDS)
        .lookupPrefix(request);
    Futures.addCallback(call, new FutureCallback<LookupPrefixResponse>() {
      @Override
      public void onSuccess(LookupPrefixResponse r) {
        answer.complete(r.getMatchedPages() == 0 ? Optional.empty() : Optional.of(new Found(store, r.getKey(), r.getMatchedPages() * pageSize)));
      }

      @Override
      public void onFailure(Throwable t) {
        LOG.debugf("kv-store %s did not answer LookupPrefix: %s", store, Status.fromThrowable(t));
        answer.complete(Optional.empty());
      }
    }, MoreExecutors.directExecutor());
    return answer;
  }

  /** The engine may load {@code found} for this request: remembers it, and the current trace for the load's span. */
  void expect(String requestId, Found found) {
    expected.put(requestId, new Expected(found, io.opentelemetry.context.Context.current()));
  }

  /** The request ended: its prefix is no longer needed, and a read still under way is cancelled. */
  void forget(String requestId) {
    Expected e = expected.remove(requestId);
    if (e != null) e.forget();
  }

  /** The engine's load of a request's stored prefix: a prefix Get into its reserved pages. */
  void load(String requestId, int numTokens, KvSink sink, Consumer<KvLoadResult> done) {
    Expected e = expected.get(requestId);
    if (e == null) {
      done.accept(KvLoadResult.failed(KvLoadResult.Reason.NOT_FOUND, "no stored prefix was found for request " + requestId));
      return;
    }
    Found f = e.found;
    if (numTokens > f.tokens()) {
      done.accept(KvLoadResult.failed(KvLoadResult.Reason.INVALID_OBJECT,
          "request " + requestId + " asks for " + numTokens + " positions of a " + f.tokens() + "-token stored prefix"));
      return;
    }
    KvTransfer traced = transfers.get(f.key(), f.store(), e.trace);
    var stub = KvStoreGrpc.newStub(channels.apply(f.store())).withDeadlineAfter(LOAD_DEADLINE_SECONDS, TimeUnit.SECONDS);
    StoreLoad.start(stub, f.key(), f.store(), false, numTokens, sink, traced, e::started, result -> {
      if (result instanceof KvLoadResult.Failed(var reason, var detail))
        LOG.debugf("request %s computes its prefix: reading it from %s failed (%s): %s", requestId, f.store(), reason, detail);
      done.accept(result);
    });
  }
}
