package io.moemesh.proto.auth;

import io.grpc.ManagedChannelBuilder;

/** Channels to the mesh's own services: plaintext, with the mesh's credentials on every call when a key is configured. */
public final class MeshChannels {
  private MeshChannels() {}

  /** A builder for {@code target} ({@code host:port} or {@code dns:///name:port}); callers add sizes, then build. */
  public static ManagedChannelBuilder<?> builder(String target) {
    ManagedChannelBuilder<?> builder = ManagedChannelBuilder.forTarget(target).usePlaintext();
    MeshKey.configured().ifPresent(key -> builder.intercept(new MeshAuth(key).clientInterceptor()));
    return builder;
  }
}
