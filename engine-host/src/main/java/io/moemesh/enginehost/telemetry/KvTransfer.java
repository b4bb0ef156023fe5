package io.moemesh.enginehost.telemetry;

import io.grpc.ClientInterceptor;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.moemesh.enginehost.telemetry.KvTransferMetrics.Direction;
import io.moemesh.enginehost.telemetry.KvTransferMetrics.FailureReason;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.StatusCode;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One KV transfer with kv-store — prefill-svc's put of a prompt's object or decode-svc's get of it — as a span and
 * as meters ({@link KvTransferMetrics}). The span ({@code kv put} / {@code kv get}) is a child of the request's
 * engine span; gRPC calls made with {@link #tracing()} are its children and carry its W3C trace context to the store.
 * It carries {@code moemesh.kv.object_key} and {@code moemesh.kv.store}, and {@code moemesh.kv.bytes} once it ends.
 *
 * <p>Thread-safe: bytes arrive on the engine's step thread (put) or a gRPC thread (get); the first of
 * {@link #succeeded}, {@link #failed} and {@link #revoked} ends it, later calls do nothing.
 */
public final class KvTransfer {
  private final Span span;
  private final ClientInterceptor tracing;
  private final Direction direction;
  private final KvTransferMetrics metrics;
  private final Counter bytesCounter;
  private final Timer latency;
  private final boolean clockFromFirstByte;
  private final long openedNanos = System.nanoTime();
  private final AtomicLong bytes = new AtomicLong();
  private final AtomicBoolean ended = new AtomicBoolean();
  private volatile long firstByteNanos;

  KvTransfer(Span span, ClientInterceptor tracing, Direction direction, KvTransferMetrics metrics) {
    this.span = span;
    this.tracing = tracing;
    this.direction = direction;
    this.metrics = metrics;
    this.bytesCounter = metrics.bytes(direction);
    this.latency = metrics.latency(direction);
    this.clockFromFirstByte = direction == Direction.SENT; // a put is timed from its first layer, a get from its open
  }

  /** Traces a call to the store as a child of this transfer, on whatever thread it starts. */
  public ClientInterceptor tracing() {
    return tracing;
  }

  /** Counts row bytes sent or received. */
  public void bytes(long n) {
    if (firstByteNanos == 0) firstByteNanos = System.nanoTime();
    bytes.addAndGet(n);
    bytesCounter.increment(n);
  }

  /** The object is committed (put) or fully received (get). */
  public void succeeded() {
    if (!ended.compareAndSet(false, true)) return;
    long from = clockFromFirstByte && firstByteNanos != 0 ? firstByteNanos : openedNanos;
    latency.record(Duration.ofNanos(System.nanoTime() - from));
    end(clockFromFirstByte ? "committed" : null);
  }

  /** A failed gRPC call, its reason taken from its status. */
  public void failed(Throwable failure) {
    failed(FailureReason.of(failure), failure.getMessage());
  }

  public void failed(FailureReason reason, String description) {
    if (!ended.compareAndSet(false, true)) return;
    metrics.failed(direction, reason);
    span.setStatus(StatusCode.ERROR, description == null ? reason.tag() : description);
    span.setAttribute(GenAiAttributes.ERROR_TYPE, reason.tag());
    end(clockFromFirstByte ? "failed" : null);
  }

  /** This side gave the object up (a put revoked because the request finished or was cancelled): not a failure. */
  public void revoked() {
    if (ended.compareAndSet(false, true)) end("revoked");
  }

  private void end(String outcome) {
    span.setAttribute(GenAiAttributes.KV_BYTES, bytes.get());
    if (outcome != null) span.setAttribute(GenAiAttributes.KV_OUTCOME, outcome);
    span.end();
  }
}
