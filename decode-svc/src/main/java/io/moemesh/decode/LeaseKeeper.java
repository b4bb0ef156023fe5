package io.moemesh.decode;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.moemesh.proto.kvstore.v1.ExtendLeaseRequest;
import io.moemesh.proto.kvstore.v1.ExtendLeaseResponse;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.prefill.v1.KvTicket;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jboss.logging.Logger;

/**
 * Keeps the KV object of a request that waits in the decode engine (queued behind full KV or busy slots)
 * from expiring in kv-store (docs/architecture.md, "Prefill/decode disaggregation", step 4): the first ExtendLease
 * goes out when half of the ticket's remaining lease has passed, each sets the lease to {@code ttl} from then, and the next
 * follows after half of that (a quarter after a failed call). Stops when the request starts loading, finishes
 * or is cancelled, and once the store says the object is gone.
 */
final class LeaseKeeper implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(LeaseKeeper.class);
  private static final long CALL_DEADLINE_MS = 5_000;
  /** Answers after which another call cannot help: the object is gone or the ttl is refused. */
  private static final Set<Status.Code> FINAL = EnumSet.of(Status.Code.NOT_FOUND, Status.Code.INVALID_ARGUMENT,
      Status.Code.FAILED_PRECONDITION, Status.Code.UNIMPLEMENTED);

  private final Duration ttl;
  private final Function<String, KvStoreGrpc.KvStoreStub> stores;
  private final InstantSource clock;
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(
      Thread.ofPlatform().name("kv-lease-keeper").daemon().factory());

  /**
   * @param ttl the lease each extension asks for
   * @param stores a stub to the kv-store at a ticket's address
   */
  LeaseKeeper(Duration ttl, Function<String, KvStoreGrpc.KvStoreStub> stores, InstantSource clock) {
    if (!ttl.isPositive()) throw new IllegalArgumentException("the lease extension must be > 0, got " + ttl);
    this.ttl = ttl;
    this.stores = stores;
    this.clock = clock;
  }

  /** Starts keeping the ticket's object alive until {@link Lease#stop} (a ticket without an expiry: as if just extended). */
  Lease keep(KvTicket ticket) {
    var lease = new Lease(ticket);
    var expiry = ticket.hasLeaseExpireTime()
        ? Instant.ofEpochSecond(ticket.getLeaseExpireTime().getSeconds(), ticket.getLeaseExpireTime().getNanos())
        : clock.instant().plus(ttl);
    lease.schedule(Duration.between(clock.instant(), expiry).dividedBy(2));
    return lease;
  }

  /** One object's extensions. */
  final class Lease {
    private final KvTicket ticket;
    private ScheduledFuture<?> next; // guarded by this
    private boolean stopped; // guarded by this

    private Lease(KvTicket ticket) {
      this.ticket = ticket;
    }

    /** No more extensions (an extension already on the wire still lands). */
    synchronized void stop() {
      stopped = true;
      if (next != null) next.cancel(false);
    }

    private synchronized void schedule(Duration delay) {
      if (stopped) return;
      next = timer.schedule(this::extend, Math.max(0, delay.toMillis()), TimeUnit.MILLISECONDS);
    }

    private void extend() {
      synchronized (this) {
        if (stopped) return;
      }
      var request = ExtendLeaseRequest.newBuilder().setKey(ticket.getObjectKey())
          .setTtl(com.google.protobuf.Duration.newBuilder().setSeconds(ttl.toSeconds()).setNanos(ttl.toNanosPart())).build();
      stores.apply(ticket.getStoreAddress()).withDeadlineAfter(CALL_DEADLINE_MS, TimeUnit.MILLISECONDS).extendLease(request, new StreamObserver<>() {
        @Override
        public void onNext(ExtendLeaseResponse response) {
          schedule(ttl.dividedBy(2));
        }

        @Override
        public void onError(Throwable t) {
          Status status = Status.fromThrowable(t);
          if (FINAL.contains(status.getCode())) {
            LOG.debugf("stopped extending the lease of KV object %s: %s", ticket.getObjectKey(), status);
            return;
          }
          LOG.warnf("could not extend the lease of KV object %s (retrying): %s", ticket.getObjectKey(), status);
          schedule(ttl.dividedBy(4));
        }

        @Override
        public void onCompleted() {}
      });
    }
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }
}
