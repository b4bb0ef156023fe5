package io.moemesh.engine;

import io.moemesh.kernels.KernelBackend;
import io.moemesh.kernels.Kernels;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.Precision;
import io.moemesh.model.demo.DemoCheckpoint;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.Map;

/** The shipped {@code tiny} config as a seeded demo checkpoint, written once per test JVM, loaded once per precision. */
final class TinyModel {
  private static Path dir;
  private static Kernels kernels;
  private static final Map<Precision, DeepseekModel> MODELS = new EnumMap<>(Precision.class);

  private TinyModel() {}

  static synchronized Path checkpoint() {
    if (dir != null) return dir;
    try {
      Path out = Files.createTempDirectory("moemesh-engine-test").resolve("tiny");
      DemoCheckpoint.writeShipped("tiny", out, 7, DemoCheckpoint.Format.BF16, (done, total) -> {});
      return dir = out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static synchronized Kernels kernels() {
    if (kernels == null) kernels = KernelBackend.NATIVE.open(2);
    return kernels;
  }

  static synchronized DeepseekModel model(Precision precision) {
    kernels();
    return MODELS.computeIfAbsent(precision, p -> DeepseekModel.load(checkpoint(), p, kernels, (done, total) -> {}));
  }
}
