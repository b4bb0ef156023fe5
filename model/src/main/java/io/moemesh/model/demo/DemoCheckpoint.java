package io.moemesh.model.demo;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moemesh.kernels.DType;
import io.moemesh.kernels.Fp8E4M3;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.LoadProgress;
import io.moemesh.model.ModelConfig;
import io.moemesh.model.ModelConfigReader;
import io.moemesh.model.checkpoint.SafetensorsWriter;
import io.moemesh.model.checkpoint.TensorSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Writes a complete, seeded-random checkpoint directory for a DeepSeek-V3 config: config.json,
 * model.safetensors and, through a {@link TokenizerWriter} (the tokenizer module's {@code TokenizerFiles::write}),
 * tokenizer.json and tokenizer_config.json. Deterministic: each tensor draws from its own
 * generator seeded by (seed, name), so the same seed gives the same bytes. In FP8 format the projections are
 * stored as e4m3 with one power-of-two {@code weight_scale_inv} per 128×128 block — so dequantizing them to
 * BF16 is exact, and an FP8 checkpoint and its BF16 twin hold the same numbers.
 */
public final class DemoCheckpoint {
  public enum Format { BF16, FP8 }

  private static final int FP8_BLOCK = 128;
  private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private DemoCheckpoint() {}

  /** The names of the configs shipped in this jar (io/moemesh/model/configs/NAME.json). */
  public static final List<String> SHIPPED = List.of("tiny", "small", "bench");

  /** {@link #write} for a shipped config ({@link #SHIPPED}), without tokenizer files ({@link TokenizerWriter#NONE}). */
  public static void writeShipped(String name, Path outDir, long seed, Format format, LoadProgress progress) throws IOException {
    writeShipped(name, outDir, seed, format, TokenizerWriter.NONE, progress);
  }

  /** {@link #write} for a shipped config ({@link #SHIPPED}), with the tokenizer files {@code tokenizer} writes. */
  public static void writeShipped(String name, Path outDir, long seed, Format format, TokenizerWriter tokenizer,
      LoadProgress progress) throws IOException {
    try (var in = DemoCheckpoint.class.getResourceAsStream("/io/moemesh/model/configs/" + name + ".json")) {
      if (in == null) throw new IllegalArgumentException("no shipped config '" + name + "' (there are " + SHIPPED + ")");
      Path config = Files.createTempFile("moemesh-config-", ".json");
      try {
        Files.copy(in, config, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        write(config, outDir, seed, format, 0, tokenizer, progress);
      } finally {
        Files.deleteIfExists(config);
      }
    }
  }

  /** {@link #write(Path, Path, long, Format, float, TokenizerWriter, LoadProgress)} without skew or tokenizer files. */
  public static void write(Path configJson, Path outDir, long seed, Format format, LoadProgress progress) throws IOException {
    write(configJson, outDir, seed, format, 0, TokenizerWriter.NONE, progress);
  }

  /** {@link #write(Path, Path, long, Format, float, TokenizerWriter, LoadProgress)} without tokenizer files. */
  public static void write(Path configJson, Path outDir, long seed, Format format, float routerSkew, LoadProgress progress)
      throws IOException {
    write(configJson, outDir, seed, format, routerSkew, TokenizerWriter.NONE, progress);
  }

  /**
   * Writes the checkpoint. A router skew {@code S ≥ 0}: each MoE gate's {@code e_score_correction_bias} gets
   * {@code + S} on a few hot experts ({@link RouterSkew}), so those experts receive most tokens — load for the
   * expert balancer to even out; {@code S = 0} writes the same bytes as no skew. {@code tokenizer} writes the
   * tokenizer files and says which ids are real tokens: the head is shaped for those (each prefers a successor
   * token, placeholders are damped), so the weights depend on it ({@link TokenizerWriter#NONE}, all ids real, gives
   * the same weights as a tokenizer whose real tokens fill the vocabulary, as the tiny config's do).
   */
  public static void write(Path configJson, Path outDir, long seed, Format format, float routerSkew,
      TokenizerWriter tokenizer, LoadProgress progress) throws IOException {
    ModelConfig config = ModelConfigReader.read(configJson);
    RouterSkew.check(routerSkew, config);
    Files.createDirectories(outDir);
    ObjectNode json = (ObjectNode) JSON.readTree(Files.readString(configJson));
    json.remove("quantization_config");
    if (format == Format.FP8) {
      ObjectNode q = json.putObject("quantization_config");
      q.put("activation_scheme", "dynamic").put("fmt", "e4m3").put("quant_method", "fp8");
      q.putArray("weight_block_size").add(FP8_BLOCK).add(FP8_BLOCK);
    }
    Files.writeString(outDir.resolve("config.json"), JSON.writeValueAsString(json) + "\n");
    config = ModelConfigReader.read(outDir.resolve("config.json"));

    int realTokens = tokenizer.write(outDir, config.vocabSize(), config.bosTokenId(), config.firstEos().orElse(1),
        config.maxPositionEmbeddings());
    if (realTokens <= 0 || realTokens > config.vocabSize()) {
      throw new IllegalStateException("the tokenizer writer reports " + realTokens + " real tokens of " + config.vocabSize());
    }
    List<WeightSpec> weights = WeightSpec.all(config);
    List<TensorSpec> specs = new ArrayList<>();
    for (WeightSpec w : weights) {
      boolean fp8 = format == Format.FP8 && w.quantizedInFp8();
      specs.add(new TensorSpec(w.name(), fp8 ? DType.F8_E4M3 : w.kind() == WeightSpec.Kind.GATE_BIAS ? DType.F32 : DType.BF16, w.shape()));
      if (fp8) specs.add(new TensorSpec(w.name() + "_scale_inv", DType.F32, blocks(w.shape())));
    }
    long total = weights.stream().mapToLong(WeightSpec::numElements).sum(), done = 0;
    try (var writer = SafetensorsWriter.create(outDir.resolve("model.safetensors"), specs, Map.of("format", "pt"))) {
      for (WeightSpec w : weights) {
        try (TensorArena arena = TensorArena.open()) {
          float[] values = RandomWeights.draw(w, config, seed, realTokens);
          if (routerSkew != 0 && w.kind() == WeightSpec.Kind.GATE_BIAS) RouterSkew.apply(values, routerSkew, seed, w.name());
          if (format == Format.FP8 && w.quantizedInFp8()) {
            Tensor q = arena.allocate(DType.F8_E4M3, w.shape());
            Tensor scales = arena.allocate(DType.F32, blocks(w.shape()));
            quantizeFp8(values, w.shape(), q, scales);
            writer.write(w.name(), q);
            writer.write(w.name() + "_scale_inv", scales);
          } else {
            Tensor t = arena.allocate(w.kind() == WeightSpec.Kind.GATE_BIAS ? DType.F32 : DType.BF16, w.shape());
            t.copyFrom(values);
            writer.write(w.name(), t);
          }
        }
        done += w.numElements();
        if (progress != null) progress.loaded(2 * done, 2 * total); // as BF16 bytes
      }
    }
  }

  private static int[] blocks(int[] shape) {
    return new int[] {(shape[0] + FP8_BLOCK - 1) / FP8_BLOCK, (shape[1] + FP8_BLOCK - 1) / FP8_BLOCK};
  }

  /** Per 128×128 block: scale = the power of two that maps the block's max into e4m3's range (≤ 448). */
  private static void quantizeFp8(float[] w, int[] shape, Tensor q, Tensor scales) {
    int rows = shape[0], cols = shape[1], blockCols = (cols + FP8_BLOCK - 1) / FP8_BLOCK;
    for (int br = 0; br * FP8_BLOCK < rows; br++)
      for (int bc = 0; bc < blockCols; bc++) {
        float amax = 0;
        for (int r = br * FP8_BLOCK; r < Math.min(rows, (br + 1) * FP8_BLOCK); r++)
          for (int c = bc * FP8_BLOCK; c < Math.min(cols, (bc + 1) * FP8_BLOCK); c++) amax = Math.max(amax, Math.abs(w[r * cols + c]));
        float scale = amax == 0 ? 1f : Math.scalb(1f, Math.getExponent(amax / 448f) + 1);
        scales.setFloat((long) br * blockCols + bc, scale);
        for (int r = br * FP8_BLOCK; r < Math.min(rows, (br + 1) * FP8_BLOCK); r++)
          for (int c = bc * FP8_BLOCK; c < Math.min(cols, (bc + 1) * FP8_BLOCK); c++)
            q.setByte((long) r * cols + c, Fp8E4M3.fromFloat(w[r * cols + c] / scale));
      }
  }

  /** Seeded draws for one tensor. */
  static final class RandomWeights {
    /** Weight of the head's copy of the embeddings: sets how clearly each token prefers its successor. */
    private static final float SUCCESSOR_GAIN = 1.0f;

    private RandomWeights() {}

    static float[] draw(WeightSpec w, ModelConfig c, long seed, int realTokens) {
      if (w.kind() == WeightSpec.Kind.HEAD) return head(w, c, seed, realTokens);
      return plain(w, c, seed);
    }

    /**
     * A head with a clear preference, as a trained model has: row v is random plus a scaled copy of the
     * embedding of token π(v), for a seeded permutation π of the real tokens, so after token t the logit of
     * π⁻¹(t) stands well above the rest (the residual stream still carries t's embedding), while every layer
     * still moves every logit. Without it the top two logits of 32K random rows are near-ties that any
     * rounding flips. Placeholder rows (ids ≥ realTokens) are damped: the tokenizer never produces them.
     */
    private static float[] head(WeightSpec w, ModelConfig c, long seed, int realTokens) {
      int vocab = w.shape()[0], dim = w.shape()[1];
      float[] v = plain(w, c, seed);
      String embedName = w.name().equals("lm_head.weight") ? "model.embed_tokens.weight"
          : w.name().replace("shared_head.head.weight", "embed_tokens.weight");
      float[] embed = plain(new WeightSpec(embedName, new int[] {vocab, dim}, WeightSpec.Kind.EMBEDDING), c, seed);
      int[] successorOf = new int[realTokens];
      for (int i = 0; i < realTokens; i++) successorOf[i] = i;
      var rng = new SplittableRandom(seed ^ 0x5DEECE66DL);
      for (int i = realTokens - 1; i > 0; i--) {
        int j = rng.nextInt(i + 1), tmp = successorOf[i];
        successorOf[i] = successorOf[j];
        successorOf[j] = tmp;
      }
      float copy = (float) (SUCCESSOR_GAIN / Math.sqrt(dim));
      for (int row = 0; row < vocab; row++) {
        int base = row * dim;
        if (row >= realTokens) {
          for (int d = 0; d < dim; d++) v[base + d] *= 0.1f;
          continue;
        }
        int source = successorOf[row] * dim;
        for (int d = 0; d < dim; d++) v[base + d] = 0.5f * v[base + d] + copy * embed[source + d];
      }
      return v;
    }

    private static float[] plain(WeightSpec w, ModelConfig c, long seed) {
      var rng = new SplittableRandom(seed * 0x9E3779B97F4A7C15L ^ w.name().hashCode() * 0xC2B2AE3D27D4EB4FL);
      int fanIn = w.shape().length > 1 ? w.shape()[1] : 1;
      float[] v = new float[Math.toIntExact(w.numElements())];
      switch (w.kind()) {
        case NORM -> fill(v, rng, 1f, 0.05f);
        case GATE_BIAS -> fill(v, rng, 0f, 0.02f);
        case EMBEDDING -> fill(v, rng, 0f, 1f);
        case PROJECTION, GATE, MIXING -> fill(v, rng, 0f, (float) (1 / Math.sqrt(fanIn)));
        case OUTPUT_PROJECTION -> fill(v, rng, 0f, (float) (1 / Math.sqrt(fanIn) / Math.sqrt(2.0 * (c.numHiddenLayers() + 1))));
        case HEAD -> fill(v, rng, 0f, (float) (3 / Math.sqrt(fanIn)));
      }
      return v;
    }

    /** Uniform with the given mean and standard deviation (uniform is as good as normal here, and faster). */
    private static void fill(float[] v, SplittableRandom rng, float mean, float std) {
      double halfWidth = std * Math.sqrt(3);
      for (int i = 0; i < v.length; i++) v[i] = (float) (mean + (rng.nextDouble() * 2 - 1) * halfWidth);
    }
  }
}
