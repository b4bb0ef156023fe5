package io.moemesh.expert;

import io.moemesh.model.demo.DemoCheckpoint;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** Writes the tiny demo checkpoint before the service starts and points the service at it. */
public class TinyExpertsResource implements QuarkusTestResourceLifecycleManager {
  private static Path dir;

  static synchronized Path checkpoint() {
    if (dir != null) return dir;
    try {
      Path out = Files.createTempDirectory("moemesh-expert-test").resolve("tiny");
      DemoCheckpoint.writeShipped("tiny", out, 5, DemoCheckpoint.Format.BF16, (done, total) -> {});
      return dir = out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public Map<String, String> start() {
    return Map.of("moemesh.expert.model-dir", checkpoint().toString());
  }

  @Override
  public void stop() {}
}
