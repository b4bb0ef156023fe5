package io.moemesh.gateway;

import io.moemesh.tokenizer.TokenizerFiles;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Writes the tiny demo model's tokenizer files and config.json (vocabulary 1024, context 512, BOS 0, EOS 1) into a
 * directory named {@value #DIR_NAME} and points the gateway at it, served as {@value #SERVED_NAME}.
 */
public class TestModel implements QuarkusTestResourceLifecycleManager {
  static final String DIR_NAME = "tiny-demo";
  static final String SERVED_NAME = "moemesh-tiny";
  static final int CONTEXT = 512;
  static final int EOS = 1;

  @Override
  public Map<String, String> start() {
    Path dir = write();
    return Map.of("moemesh.gateway.model-dir", dir.toString(), "moemesh.gateway.served-model-name", SERVED_NAME);
  }

  /** Writes the model files into a new temporary directory named {@value #DIR_NAME}. */
  static Path write() {
    try {
      Path dir = Files.createTempDirectory("gateway-model").resolve(DIR_NAME);
      TokenizerFiles.write(dir, 1024, 0, EOS, CONTEXT);
      try (InputStream config = TokenizerFiles.class.getResourceAsStream("/io/moemesh/model/configs/tiny.json")) {
        Files.copy(config, dir.resolve("config.json"));
      }
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void stop() {}
}
