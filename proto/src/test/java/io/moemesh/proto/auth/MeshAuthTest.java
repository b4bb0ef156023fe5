package io.moemesh.proto.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MeshAuthTest {
  static final String GET = "moemesh.kvstore.v1.KvStore/Get";
  static final MeshKey KEY = new MeshKey("0123456789abcdef0123456789abcdef".getBytes());
  static final Instant NOW = Instant.parse("2026-12-07T05:00:00Z");

  static MeshAuth at(MeshKey key, Instant instant) {
    return new MeshAuth(key, Clock.fixed(instant, ZoneOffset.UTC));
  }

  @Test
  void aTokenAdmitsItsMethodWithinTheSkew() {
    String token = at(KEY, NOW).token(GET);
    assertThat(token).matches("v1\\.\\d+\\.[0-9a-f]{64}");
    assertThat(at(KEY, NOW).refusal(token, GET)).isNull();
    assertThat(at(KEY, NOW.plus(MeshAuth.MAX_SKEW)).refusal(token, GET)).isNull();
    assertThat(at(KEY, NOW.minus(MeshAuth.MAX_SKEW)).refusal(token, GET)).isNull();
  }

  @Test
  void refusesEverythingElse() {
    MeshAuth auth = at(KEY, NOW);
    String token = auth.token(GET);
    assertThat(auth.refusal(null, GET)).startsWith("missing");
    assertThat(auth.refusal(token, "moemesh.decode.v1.Decode/Generate")).as("another method").isEqualTo("invalid mesh credentials");
    assertThat(at(KEY, NOW.plus(MeshAuth.MAX_SKEW).plusSeconds(1)).refusal(token, GET)).isEqualTo("expired mesh credentials");
    assertThat(at(KEY, NOW.minus(MeshAuth.MAX_SKEW).minusSeconds(1)).refusal(token, GET)).isEqualTo("expired mesh credentials");
    MeshKey other = new MeshKey("fedcba9876543210fedcba9876543210".getBytes());
    assertThat(at(other, NOW).refusal(token, GET)).as("another mesh's key").isEqualTo("invalid mesh credentials");
    String tampered = token.substring(0, token.length() - 1) + (token.endsWith("0") ? "1" : "0");
    assertThat(auth.refusal(tampered, GET)).isEqualTo("invalid mesh credentials");
    String[] parts = token.split("\\.");
    assertThat(auth.refusal("v1." + (Long.parseLong(parts[1]) + 1) + "." + parts[2], GET)).as("time moved").isEqualTo("invalid mesh credentials");
    for (String bad : new String[] {"", "v1", "v2." + parts[1] + "." + parts[2], "v1.x." + parts[2], "v1.1.2.3", "Bearer abc"})
      assertThat(auth.refusal(bad, GET)).as(bad).isEqualTo("malformed mesh credentials");
  }

  @Test
  void keysAreReadFromFilesAndShortOnesRefused(@TempDir Path dir) throws Exception {
    Path good = Files.write(dir.resolve("mesh.key"), new byte[32]);
    assertThat(MeshKey.read(good)).isEqualTo(new MeshKey(new byte[32])).hasToString("MeshKey[32 bytes]");
    Path shortKey = Files.write(dir.resolve("short.key"), new byte[31]);
    assertThatThrownBy(() -> MeshKey.read(shortKey)).hasMessageContaining("at least 32");
    assertThatThrownBy(() -> MeshKey.read(dir.resolve("absent.key"))).hasMessageContaining("cannot read the mesh key file");
  }
}
