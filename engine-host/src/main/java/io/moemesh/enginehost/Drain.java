package io.moemesh.enginehost;

import io.moemesh.proto.drain.DrainMarker;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jboss.logging.Logger;

/**
 * Graceful drain of a prefill or decode replica (docs/reliability.md, "Drain and migration"), one way:
 * <pre>
 *   serving ─▶ drain(timeout) ─▶ draining: readiness DOWN, Load and new calls answer UNAVAILABLE (+ drain trailer),
 *                                the calls in flight go on ─▶ each ends by itself, or at the timeout is cut off
 *                                (UNAVAILABLE + drain trailer: the gateway continues its generation elsewhere)
 * </pre>
 * The service registers each call in flight ({@link #track}) with what cutting it off means for it, and asks
 * {@link #refuseIfDraining} before taking a new one. SIGTERM (Quarkus shutdown) and the {@code Drain} RPC both end here.
 */
@ApplicationScoped
public class Drain {
  private static final Logger LOG = Logger.getLogger(Drain.class);
  /** After the cut-off, how long the cut calls get to write their status before drain returns (and shutdown goes on). */
  private static final Duration CUT_OFF_FLUSH = Duration.ofSeconds(2);
  private final AtomicBoolean draining = new AtomicBoolean();
  private final Set<Call> live = new LinkedHashSet<>(); // guarded by itself

  /** What a drain did: calls in flight at its start that ended by themselves, and those it cut off at the timeout. */
  public record Result(int finished, int cutOff) {}

  /** One call in flight; close it when the call ends, however it ends (idempotent). */
  public final class Call implements AutoCloseable {
    private final Runnable cutOff;
    private final AtomicBoolean cut = new AtomicBoolean();

    private Call(Runnable cutOff) {
      this.cutOff = cutOff;
    }

    private void cutOff() {
      if (cut.compareAndSet(false, true)) cutOff.run();
    }

    @Override
    public void close() {
      synchronized (live) {
        if (live.remove(this)) live.notifyAll();
      }
    }
  }

  public boolean draining() {
    return draining.get();
  }

  /** Throws UNAVAILABLE with the drain trailer while draining: the caller retries {@code what} on another replica. */
  public void refuseIfDraining(String what) {
    if (draining.get()) throw DrainMarker.unavailable("this replica is draining and takes no new " + what);
  }

  /** Registers a call in flight; {@code cutOff} ends it (with {@link DrainMarker#unavailable}) if a drain times out first. */
  public Call track(Runnable cutOff) {
    Call call = new Call(cutOff);
    synchronized (live) {
      live.add(call);
    }
    return call;
  }

  /** Calls in flight now. */
  public int inFlight() {
    synchronized (live) {
      return live.size();
    }
  }

  /**
   * The Drain RPC of an engine service: drains with the call's timeout, or {@code configured} if it names none, on a
   * worker thread, and answers once the replica is empty; a negative timeout is INVALID_ARGUMENT.
   */
  public io.smallrye.mutiny.Uni<io.moemesh.proto.common.v1.DrainResponse> answer(io.moemesh.proto.common.v1.DrainRequest request,
      Duration configured) {
    return io.smallrye.mutiny.Uni.createFrom().item(() -> {
      Duration timeout;
      try {
        timeout = ProtoMapping.drainTimeout(request, configured);
      } catch (IllegalArgumentException e) {
        throw io.grpc.Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException();
      }
      return ProtoMapping.drained(drain(timeout));
    }).runSubscriptionOn(io.smallrye.mutiny.infrastructure.Infrastructure.getDefaultWorkerPool());
  }

  /**
   * Stops taking work, waits up to {@code timeout} for the calls in flight to end, cuts off the rest and returns once
   * they are gone (or {@link #CUT_OFF_FLUSH} later). A second drain (the RPC, then SIGTERM) waits for the first.
   */
  public synchronized Result drain(Duration timeout) {
    boolean first = draining.compareAndSet(false, true);
    int atStart = inFlight();
    if (first) LOG.infof("draining: readiness down, no new work; %d calls in flight get up to %s", atStart, timeout);
    awaitEmpty(timeout);
    List<Call> remaining;
    synchronized (live) {
      remaining = new ArrayList<>(live);
    }
    if (!remaining.isEmpty()) LOG.infof("drain timeout: cutting off %d calls (their gateways continue them elsewhere)", remaining.size());
    for (Call c : remaining) {
      try {
        c.cutOff();
      } catch (RuntimeException e) {
        LOG.warnf(e, "cutting off a call failed");
      }
    }
    awaitEmpty(CUT_OFF_FLUSH);
    Result result = new Result(Math.max(0, atStart - remaining.size()), remaining.size());
    LOG.infof("drained: %d calls finished, %d cut off", result.finished(), result.cutOff());
    return result;
  }

  private void awaitEmpty(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    synchronized (live) {
      while (!live.isEmpty()) {
        long left = deadline - System.nanoTime();
        if (left <= 0) return;
        try {
          live.wait(Math.max(1, left / 1_000_000));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }
}
