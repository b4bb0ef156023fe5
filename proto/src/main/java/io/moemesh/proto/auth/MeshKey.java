package io.moemesh.proto.auth;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;

/**
 * The mesh's shared secret: the bytes of the file that {@code moemesh.mesh.key-file} (JVM property) or
 * {@code MOEMESH_MESH_KEY_FILE} (environment) names — written by {@code bin/moemesh up}, mounted from a Secret on
 * Kubernetes. Neither set: internal calls are not authenticated (tests, a single trusted host).
 */
public final class MeshKey {
  public static final String PROPERTY = "moemesh.mesh.key-file";
  public static final String ENVIRONMENT = "MOEMESH_MESH_KEY_FILE";
  /** HMAC-SHA256's block-sized key: shorter keys are refused rather than weakening every call. */
  public static final int MIN_BYTES = 32;

  private final byte[] bytes;

  MeshKey(byte[] bytes) {
    if (bytes.length < MIN_BYTES) {
      throw new IllegalArgumentException("the mesh key has " + bytes.length + " bytes; it needs at least " + MIN_BYTES
          + " (e.g. head -c 32 /dev/urandom > mesh.key)");
    }
    this.bytes = bytes.clone();
  }

  /** The key the process is configured with, read once per call; fails when the named file is missing or too short. */
  public static Optional<MeshKey> configured() {
    String file = System.getProperty(PROPERTY);
    if (file == null || file.isBlank()) file = System.getenv(ENVIRONMENT);
    if (file == null || file.isBlank()) return Optional.empty();
    return Optional.of(read(Path.of(file.strip())));
  }

  /** The key in {@code file}: its bytes, at least {@link #MIN_BYTES} of them. */
  public static MeshKey read(Path file) {
    try {
      return new MeshKey(Files.readAllBytes(file));
    } catch (IOException e) {
      throw new IllegalStateException("cannot read the mesh key file " + file + " (" + PROPERTY + " / " + ENVIRONMENT
          + "): " + e.getMessage(), e);
    }
  }

  byte[] bytes() {
    return bytes.clone();
  }

  @Override
  public String toString() {
    return "MeshKey[" + bytes.length + " bytes]"; // never the bytes
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof MeshKey k && java.security.MessageDigest.isEqual(k.bytes, bytes);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(bytes);
  }
}
