package io.moemesh.proto.auth;

import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;

/** Channels to the mesh's own services: plaintext, with the mesh's credentials on every call when a key is configured. */
public final class MeshChannels {
  private MeshChannels() {}

  /** A builder for {@code target} ({@code host:port} or {@code dns:///name:port}); callers add sizes, then build. */
  public static ManagedChannelBuilder<?> builder(String target) {
    ManagedChannelBuilder<?> builder = ManagedChannelBuilder.forTarget(target).usePlaintext();
    MeshKey.configured().ifPresent(key -> builder.intercept(new MeshAuth(key).clientInterceptor()));
    return builder;
  }

  /**
   * A failed call's status for a message or a log line, in one line: code, description and the cause's message
   * ({@code UNAVAILABLE: io exception (Connection refused: localhost/127.0.0.1:9501)}), never the cause's stack trace,
   * which {@link Status#toString} includes.
   */
  public static String describe(Status status) {
    Throwable cause = status.getCause();
    return status.getCode() + (status.getDescription() != null ? ": " + status.getDescription() : "")
        + (cause != null && cause.getMessage() != null ? " (" + cause.getMessage().lines().findFirst().orElse("") + ")" : "");
  }
}
