package io.moemesh.prefill;

import io.moemesh.model.demo.DemoCheckpoint;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** Writes the tiny demo checkpoint before the service starts and points the engine at it. */
public class TinyCheckpointResource implements QuarkusTestResourceLifecycleManager {
  static Path dir;

  static synchronized Path checkpoint() {
    if (dir != null) return dir;
    try {
      Path out = Files.createTempDirectory("moemesh-test").resolve("tiny");
      DemoCheckpoint.writeShipped("tiny", out, 5, DemoCheckpoint.Format.BF16, (done, total) -> {});
      return dir = out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public Map<String, String> start() {
    return Map.of("moemesh.engine.model-dir", checkpoint().toString());
  }

  @Override
  public void stop() {}
}
