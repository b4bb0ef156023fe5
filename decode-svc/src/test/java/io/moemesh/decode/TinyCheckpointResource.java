package io.moemesh.decode;

import io.moemesh.model.DeepseekModel;
import io.moemesh.model.demo.DemoCheckpoint;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.io.IOException;
import java.io.InputStream;
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
      Path root = Files.createTempDirectory("moemesh-decode-test");
      Path config = root.resolve("tiny.json");
      try (InputStream in = DeepseekModel.class.getResourceAsStream("/io/moemesh/model/configs/tiny.json")) {
        Files.copy(in, config);
      }
      DemoCheckpoint.write(config, root.resolve("tiny"), 5, DemoCheckpoint.Format.BF16, (done, total) -> {});
      return dir = root.resolve("tiny");
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
