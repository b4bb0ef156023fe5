package io.moemesh.model;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moemesh.kernels.DType;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.checkpoint.Checkpoint;
import io.moemesh.model.checkpoint.SafetensorsWriter;
import io.moemesh.model.checkpoint.StDType;
import io.moemesh.model.demo.DemoCheckpoint;
import io.moemesh.model.reference.NaiveDeepseek;
import io.moemesh.tokenizer.TokenizerFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/** Checkpoint directories for model tests: the shipped demo configs with seeded random weights. */
final class TestCheckpoints {
  private static final ObjectMapper JSON = new ObjectMapper();

  private TestCheckpoints() {}

  /** A shipped config ({@code tiny}, {@code small}, {@code bench}) on the classpath. */
  static Path config(String name) {
    try {
      return Path.of(TestCheckpoints.class.getResource("/io/moemesh/model/configs/" + name + ".json").toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  /** {@code make-model}: a demo checkpoint of config {@code name}, with its tokenizer, in {@code root/name-format-seed}. */
  static Path demo(Path root, String name, DemoCheckpoint.Format format, long seed) {
    Path dir = root.resolve(name + "-" + format.name().toLowerCase() + "-" + seed);
    try {
      DemoCheckpoint.write(config(name), dir, seed, format, 0, TokenizerFiles::write, null);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return dir;
  }

  /**
   * The BF16 twin of an FP8 checkpoint, as DeepSeek's {@code fp8_cast_bf16.py} makes it: every F8_E4M3 weight
   * times its block's {@code weight_scale_inv}, stored as BF16 (exact for the demo writer's power-of-two
   * scales), the scales dropped, every other tensor copied, {@code quantization_config} removed.
   */
  static Path bf16Twin(Path fp8Dir, Path outDir) {
    try {
      Files.createDirectories(outDir);
      ObjectNode config = (ObjectNode) JSON.readTree(Files.readString(fp8Dir.resolve("config.json")));
      ObjectNode quantization = (ObjectNode) config.remove("quantization_config");
      int block = quantization.get("weight_block_size").get(0).asInt();
      Files.writeString(outDir.resolve("config.json"), JSON.writeValueAsString(config));
      try (Checkpoint checkpoint = Checkpoint.open(fp8Dir); TensorArena arena = TensorArena.open()) {
        LinkedHashMap<String, Tensor> tensors = new LinkedHashMap<>();
        for (String name : checkpoint.names()) {
          if (name.endsWith("_scale_inv")) continue;
          Tensor t = checkpoint.load(name, arena);
          tensors.put(name, checkpoint.info(name).dtype() == StDType.F8_E4M3
              ? dequantize(t, checkpoint.load(name + "_scale_inv", arena), block, arena) : t);
        }
        SafetensorsWriter.write(outDir.resolve("model.safetensors"), tensors, Map.of("format", "pt"));
      }
      return outDir;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Tensor dequantize(Tensor q, Tensor scaleInv, int block, TensorArena arena) {
    int rows = q.dim(0), cols = q.dim(1);
    Tensor out = arena.allocate(DType.BF16, rows, cols);
    for (int i = 0; i < rows; i++)
      for (int j = 0; j < cols; j++) {
        double value = NaiveDeepseek.e4m3(q.getByte((long) i * cols + j))
            * scaleInv.getFloat((long) (i / block) * scaleInv.dim(1) + j / block);
        if ((float) value != value) throw new IllegalStateException("not exact in F32: " + value);
        out.setFloat((long) i * cols + j, (float) value);
        if (out.getFloat((long) i * cols + j) != (float) value)
          throw new IllegalStateException("the dequantized weight " + value + " is not exact in BF16");
      }
    return out;
  }
}
