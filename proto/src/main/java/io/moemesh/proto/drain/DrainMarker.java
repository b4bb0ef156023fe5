package io.moemesh.proto.drain;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;

/**
 * How a draining replica ends or refuses a call, one definition for the services that drain and the gateway that reads
 * it: {@code UNAVAILABLE} with the trailer {@code moemesh-drain: 1}. UNAVAILABLE alone already sends a gateway to
 * another replica; the trailer tells a drain (planned, counted as such) from a replica that failed.
 */
public final class DrainMarker {
  public static final Metadata.Key<String> TRAILER = Metadata.Key.of("moemesh-drain", Metadata.ASCII_STRING_MARSHALLER);

  private DrainMarker() {}

  /** UNAVAILABLE with the drain trailer; {@code why} becomes the description. */
  public static StatusRuntimeException unavailable(String why) {
    Metadata trailers = new Metadata();
    trailers.put(TRAILER, "1");
    return Status.UNAVAILABLE.withDescription(why).asRuntimeException(trailers);
  }

  /** Whether {@code failure} is a call ended by a draining replica. */
  public static boolean isDrain(Throwable failure) {
    if (Status.fromThrowable(failure).getCode() != Status.Code.UNAVAILABLE) return false;
    Metadata trailers = Status.trailersFromThrowable(failure);
    return trailers != null && "1".equals(trailers.get(TRAILER));
  }
}
