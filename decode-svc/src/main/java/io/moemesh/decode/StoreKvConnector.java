package io.moemesh.decode;

import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.moemesh.proto.auth.MeshChannels;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.moemesh.engine.KvConnector;
import io.moemesh.engine.KvLoadResult;
import io.moemesh.enginehost.kv.StoreLoad;
import io.moemesh.enginehost.telemetry.KvTransfer;
import io.moemesh.enginehost.telemetry.KvTransferMetrics.FailureReason;
import io.moemesh.enginehost.telemetry.KvTransfers;
import io.moemesh.proto.kvstore.v1.GetRequest;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.kvstore.v1.ReleaseRequest;
import io.moemesh.proto.kvstore.v1.ReleaseResponse;
import io.moemesh.proto.prefill.v1.KvTicket;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.jboss.logging.Logger;

/**
 * The decode role's side of KV transfer: for a request admitted with a ticket, pulls the object from the
 * kv-store named in the ticket layer by layer (each frame lands in the request's reserved pages as it
 * arrives), checks that every layer's every token came, then releases the object. While the request waits
 * to be admitted, the object's lease is extended ({@link LeaseKeeper}); a request that ends before its load
 * did ({@link #abandon}) cancels the load and releases the object, so nothing waits for its lease to end.
 * Each pull is a {@link KvTransfer}: a {@code kv get} span under the request's engine span, and the transfer meters.
 */
@ApplicationScoped
public class StoreKvConnector implements KvConnector {
  private static final Logger LOG = Logger.getLogger(StoreKvConnector.class);
  private static final long LOAD_DEADLINE_SECONDS = 60;
  private final Map<String, Transfer> transfers = new ConcurrentHashMap<>(); // expected or loading, by request id
  private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();
  private volatile LeaseKeeper leases;
  @Inject KvTransfers kvTransfers;

  @Inject DecodeConfig config;

  /** One ticket's way into the engine: expected (its lease kept), then loading, until loaded or abandoned. */
  private static final class Transfer {
    final KvTicket ticket;
    final io.opentelemetry.context.Context trace; // of the call that brought the ticket: the load runs later, on the engine's thread
    LeaseKeeper.Lease lease; // guarded by this
    ClientCallStreamObserver<GetRequest> get; // guarded by this: the load's Get, once started
    KvTransfer traced; // guarded by this: the load's span and meters, once started
    boolean abandoned; // guarded by this

    Transfer(KvTicket ticket, io.opentelemetry.context.Context trace) {
      this.ticket = ticket;
      this.trace = trace;
    }
  }

  /** Remembers the ticket of a request about to be submitted with a KV import, and keeps its object alive meanwhile. */
  void expect(String requestId, KvTicket ticket) {
    var transfer = new Transfer(ticket, io.opentelemetry.context.Context.current());
    synchronized (transfer) {
      transfers.put(requestId, transfer);
      transfer.lease = leases().keep(ticket);
    }
  }

  /**
   * The request ended (finished, failed or cancelled): if its KV was not loaded yet, the load is cancelled (the
   * engine frees the pages once the connector reports) and the object released, as nobody will read it.
   */
  void abandon(String requestId) {
    Transfer transfer = transfers.remove(requestId);
    if (transfer == null) return; // loaded (and released), or never expected
    ClientCallStreamObserver<GetRequest> get;
    KvTransfer traced;
    synchronized (transfer) {
      transfer.abandoned = true;
      transfer.lease.stop();
      get = transfer.get;
      traced = transfer.traced;
    }
    if (traced != null) traced.revoked(); // before the cancel, whose error is not a failure of the transfer
    if (get != null) get.cancel("the request ended before its KV was loaded", null);
    release(transfer.ticket, traced);
  }

  @Override
  public void saveLayer(String requestId, int layerId, int startPosition, byte[] rows) {
    throw new IllegalStateException("decode-svc imports KV; request " + requestId + " asked to export it");
  }

  @Override
  public void load(String requestId, int numTokens, KvSink sink, Consumer<KvLoadResult> done) {
    Transfer transfer = transfers.get(requestId);
    if (transfer == null) {
      done.accept(KvLoadResult.failed(KvLoadResult.Reason.NOT_FOUND, "no KV ticket for request " + requestId));
      return;
    }
    KvTicket ticket = transfer.ticket;
    KvTransfer traced = kvTransfers.get(ticket.getObjectKey(), ticket.getStoreAddress(), transfer.trace);
    synchronized (transfer) {
      transfer.lease.stop(); // admitted: the Get pins the object from now on
      transfer.traced = traced;
    }
    Consumer<KvLoadResult> finished = result -> {
      // loaded: the store may drop it; failed: nobody else reads it — unless abandon released it already
      if (transfers.remove(requestId, transfer) || result instanceof KvLoadResult.Loaded) release(ticket, traced);
      done.accept(result);
    };
    if (ticket.getNumTokens() != numTokens) {
      String failure = "the ticket holds " + ticket.getNumTokens() + " tokens but the prompt has " + numTokens;
      traced.failed(FailureReason.INVALID_OBJECT, failure);
      finished.accept(KvLoadResult.failed(KvLoadResult.Reason.INVALID_OBJECT, failure));
      return;
    }
    var stub = KvStoreGrpc.newStub(channel(ticket.getStoreAddress())).withDeadlineAfter(LOAD_DEADLINE_SECONDS, TimeUnit.SECONDS);
    StoreLoad.start(stub, ticket.getObjectKey(), ticket.getStoreAddress(), true, numTokens, sink, traced, call -> register(transfer, call), finished);
  }

  /** Registers the Get so {@link #abandon} can cancel it; one abandoned meanwhile is cancelled at once. */
  private static void register(Transfer transfer, ClientCallStreamObserver<GetRequest> call) {
    boolean abandoned;
    synchronized (transfer) {
      transfer.get = call;
      abandoned = transfer.abandoned;
    }
    if (abandoned) call.cancel("the request ended before its KV was loaded", null);
  }

  /**
   * The store may drop the object (best effort; its lease would expire anyway). Releasing twice is harmless. The
   * call runs outside the caller's gRPC context: a release made because a Generate call was cancelled would
   * otherwise be cancelled with it. It is traced under the load's span when there was a load.
   */
  private void release(KvTicket ticket, KvTransfer traced) {
    var stub = KvStoreGrpc.newStub(channel(ticket.getStoreAddress())).withDeadlineAfter(10, TimeUnit.SECONDS);
    var calls = traced == null ? stub : stub.withInterceptors(traced.tracing());
    Context.ROOT.run(() -> calls
        .release(ReleaseRequest.newBuilder().setKey(ticket.getObjectKey()).build(), new StreamObserver<>() {
          @Override
          public void onNext(ReleaseResponse value) {}

          @Override
          public void onError(Throwable t) {
            Status status = Status.fromThrowable(t);
            if (status.getCode() == Status.Code.NOT_FOUND) LOG.debugf("KV object %s was already gone", ticket.getObjectKey());
            else LOG.warnf("could not release KV object %s: %s", ticket.getObjectKey(), status);
          }

          @Override
          public void onCompleted() {}
        }));
  }

  private LeaseKeeper leases() {
    if (leases == null) {
      synchronized (this) {
        if (leases == null) leases = new LeaseKeeper(config.kvLeaseExtension(), a -> KvStoreGrpc.newStub(channel(a)), InstantSource.system());
      }
    }
    return leases;
  }

  private ManagedChannel channel(String address) {
    return channels.computeIfAbsent(address,
        a -> MeshChannels.builder(a).maxInboundMessageSize(64 << 20).build());
  }

  @PreDestroy
  void close() {
    if (leases != null) leases.close();
    channels.values().forEach(ManagedChannel::shutdownNow);
  }
}
