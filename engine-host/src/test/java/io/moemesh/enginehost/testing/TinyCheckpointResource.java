package io.moemesh.enginehost.testing;

import io.moemesh.engine.KvConnector;
import io.moemesh.engine.LoadedEngine;
import io.moemesh.enginehost.ConfigMappings;
import io.moemesh.model.demo.DemoCheckpoint;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * For the engine services' tests (shipped in engine-host's test jar): writes the tiny demo checkpoint before
 * the service starts and points its engine at it; {@link #reference()} is the same model in the test's JVM.
 */
public class TinyCheckpointResource implements QuarkusTestResourceLifecycleManager {
  private static Path dir;

  public static synchronized Path checkpoint() {
    if (dir != null) return dir;
    try {
      Path out = Files.createTempDirectory("moemesh-test").resolve("tiny");
      DemoCheckpoint.writeShipped("tiny", out, 5, DemoCheckpoint.Format.BF16, (done, total) -> {});
      return dir = out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** An engine over the same checkpoint and settings as the service's, to compare its answers with. */
  public static LoadedEngine reference() {
    var config = Map.of("moemesh.engine.model-dir", checkpoint().toString(), "moemesh.engine.kv-cache-memory", "16M");
    return LoadedEngine.open(ConfigMappings.engine(config), KvConnector.NONE,
        (done, total) -> {});
  }

  @Override
  public Map<String, String> start() {
    return Map.of("moemesh.engine.model-dir", checkpoint().toString());
  }

  @Override
  public void stop() {}
}
