package io.moemesh.gateway;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.moemesh.proto.drain.DrainMarker;
import java.util.Locale;
import java.util.Optional;

/** Why a generation moved to another decode replica mid-stream (the {@code reason} of the migration counter). */
enum MigrationReason {
  /** The replica drained (SIGTERM, a planner): UNAVAILABLE with the drain marker. */
  DRAIN,
  /** The replica died or the connection broke: UNAVAILABLE. */
  UNAVAILABLE,
  /** The stream closed without a finish reason. */
  INCOMPLETE;

  String label() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The reason a failed stream may continue elsewhere; empty for a failure that is the request's (or a bug). */
  static Optional<MigrationReason> of(Throwable failure) {
    if (DrainMarker.isDrain(failure)) return Optional.of(DRAIN);
    if (connectionLost(failure)) return Optional.of(UNAVAILABLE);
    if (failure instanceof BackendException.Unfinished) return Optional.of(INCOMPLETE);
    return Optional.empty();
  }

  /**
   * The replica is gone or the connection to it broke: UNAVAILABLE, or the client transport's own UNKNOWN "channel
   * closed", which a stream cut by the peer's death can end with instead (seen when a decode replica was killed with
   * kill -9 mid-stream); neither is the request's failure.
   */
  static boolean connectionLost(Throwable failure) {
    if (!(failure instanceof StatusRuntimeException e)) return false;
    Status status = e.getStatus();
    return status.getCode() == Status.Code.UNAVAILABLE
        || status.getCode() == Status.Code.UNKNOWN && "channel closed".equals(status.getDescription());
  }
}
