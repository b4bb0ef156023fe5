package io.moemesh.enginehost.telemetry;

import io.grpc.Status;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.quarkus.runtime.Startup;
import jakarta.inject.Singleton;
import java.util.Locale;

/**
 * KV moved between an engine service and kv-store, on {@code /q/metrics} (docs/architecture.md, "Observability"):
 * <ul>
 *   <li>{@code moemesh_kv_transfer_bytes_total{direction}}: row bytes sent to the store (prefill's puts) or
 *       received from it (decode's gets), counted frame by frame;
 *   <li>{@code moemesh_kv_transfer_seconds{direction}} (histogram): a put from its first layer to the store's
 *       commit, a get from opening the stream to its last byte (successful transfers only);
 *   <li>{@code moemesh_kv_transfer_failures_total{direction,reason}}: transfers that failed, by {@link FailureReason}.
 * </ul>
 * A put revoked by its own side (the first token finished the request, or the request was cancelled) is neither.
 * Bytes and times of a direction appear once it is first used: prefill-svc shows {@code sent}, decode-svc
 * {@code received}. The failure counters are there from the start, at zero, so that rates and alerts over them work
 * before the first failure.
 */
@Startup
@Singleton
public class KvTransferMetrics {
  /** The {@code direction} tag. */
  public enum Direction {
    /** prefill-svc's puts */
    SENT,
    /** decode-svc's gets, and prefill-svc's reads of stored prefixes */
    RECEIVED;

    String tag() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** Why a transfer failed, as the {@code reason} tag (bounded: one value per constant). */
  public enum FailureReason {
    /** kv-store could not be reached (UNAVAILABLE). */
    STORE_UNAVAILABLE,
    /** the call ran past its deadline (DEADLINE_EXCEEDED). */
    DEADLINE_EXCEEDED,
    /** the object was not there: never committed, expired or evicted (NOT_FOUND). */
    OBJECT_NOT_FOUND,
    /** the store had no room for the object (RESOURCE_EXHAUSTED). */
    STORE_FULL,
    /** the store refused the call (INVALID_ARGUMENT, FAILED_PRECONDITION, ALREADY_EXISTS, OUT_OF_RANGE). */
    REJECTED,
    /** the object's layout or rows did not fit the engine's cache. */
    INVALID_OBJECT,
    /** the call was cancelled (CANCELLED). */
    CANCELLED,
    /** any other status. */
    OTHER;

    /** The reason of a failed gRPC call. */
    public static FailureReason of(Throwable failure) {
      return switch (Status.fromThrowable(failure).getCode()) {
        case UNAVAILABLE -> STORE_UNAVAILABLE;
        case DEADLINE_EXCEEDED -> DEADLINE_EXCEEDED;
        case NOT_FOUND -> OBJECT_NOT_FOUND;
        case RESOURCE_EXHAUSTED -> STORE_FULL;
        case INVALID_ARGUMENT, FAILED_PRECONDITION, ALREADY_EXISTS, OUT_OF_RANGE -> REJECTED;
        case CANCELLED -> CANCELLED;
        case OK, UNKNOWN, ABORTED, PERMISSION_DENIED, UNAUTHENTICATED, UNIMPLEMENTED, INTERNAL, DATA_LOSS -> OTHER;
      };
    }

    public String tag() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  private final MeterRegistry registry;

  KvTransferMetrics(MeterRegistry registry) {
    this.registry = registry;
    for (Direction d : Direction.values()) for (FailureReason r : FailureReason.values()) failures(d, r);
  }

  Counter bytes(Direction direction) {
    return Counter.builder("moemesh.kv.transfer.bytes")
        .description("KV row bytes sent to (puts) or received from (gets) kv-store")
        .tag("direction", direction.tag()).register(registry);
  }

  Timer latency(Direction direction) {
    return Timer.builder("moemesh.kv.transfer")
        .description("KV transfer time: put = first layer to commit, get = open to last byte")
        .tag("direction", direction.tag()).publishPercentileHistogram().register(registry);
  }

  void failed(Direction direction, FailureReason reason) {
    failures(direction, reason).increment();
  }

  private Counter failures(Direction direction, FailureReason reason) {
    return Counter.builder("moemesh.kv.transfer.failures").description("Failed KV transfers by reason")
        .tag("direction", direction.tag()).tag("reason", reason.tag()).register(registry);
  }
}
