package io.moemesh.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.NativeKernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.checkpoint.Checkpoint;
import io.moemesh.model.demo.DemoCheckpoint;
import io.moemesh.model.demo.DemoCheckpoint.Format;
import io.moemesh.model.demo.RouterSkew;
import io.moemesh.model.moe.ExpertBackend;
import io.moemesh.model.moe.Placement;
import io.moemesh.model.moe.Routing;
import io.moemesh.model.moe.balance.ExpertBalancer;
import io.moemesh.model.moe.balance.ExpertLoad;
import io.moemesh.tokenizer.TokenizerFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code make-model --router-skew S} on the tiny config: only the gate biases change, by {@code +S} on the hot
 * experts; the routed tokens then pile onto those experts, and the balancer spreads them again.
 */
class RouterSkewTest {
  static final long SEED = 7;
  static final float SKEW = 1f;
  static final int PROMPTS = 8, PROMPT_LEN = 48, PAGE = 16;

  @TempDir static Path dir;
  static NativeKernels kernels;
  static Path plain, skewed;
  static ModelConfig config;

  @BeforeAll
  static void writeCheckpoints() throws IOException {
    kernels = NativeKernels.create(2);
    plain = TestCheckpoints.demo(dir, "tiny", Format.BF16, SEED);
    skewed = dir.resolve("tiny-skewed");
    DemoCheckpoint.write(TestCheckpoints.config("tiny"), skewed, SEED, Format.BF16, SKEW, TokenizerFiles::write, null);
    config = ModelConfigReader.read(plain.resolve("config.json"));
  }

  @AfterAll
  static void close() {
    kernels.close();
  }

  @Test
  void zeroSkewWritesTheSameBytes() throws IOException {
    Path zero = dir.resolve("tiny-zero-skew");
    DemoCheckpoint.write(TestCheckpoints.config("tiny"), zero, SEED, Format.BF16, 0, TokenizerFiles::write, null);
    for (String file : List.of("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"))
      assertThat(Files.readAllBytes(zero.resolve(file))).as(file).isEqualTo(Files.readAllBytes(plain.resolve(file)));
  }

  @Test
  void onlyTheHotExpertsBiasesMove() {
    try (Checkpoint a = Checkpoint.open(plain); Checkpoint b = Checkpoint.open(skewed); TensorArena arena = TensorArena.open()) {
      assertThat(b.names()).isEqualTo(a.names());
      int biases = 0;
      for (String name : a.names()) {
        float[] before = a.load(name, arena).toFloatArray(), after = b.load(name, arena).toFloatArray();
        if (!name.endsWith("e_score_correction_bias")) {
          assertThat(after).as(name).containsExactly(before);
          continue;
        }
        biases++;
        int[] hot = RouterSkew.hotExperts(before.length, SEED, name);
        assertThat(hot).as(name).hasSize(1); // 8 experts / 8
        for (int e = 0; e < before.length; e++)
          assertThat(after[e]).as("%s[%d]", name, e).isEqualTo(e == hot[0] ? before[e] + SKEW : before[e]);
      }
      assertThat(biases).as("the MoE layers and the MTP layer").isEqualTo(3);
    }
  }

  @Test
  void tokensPileOntoTheHotExpertsAndTheBalancerSpreadsThem() {
    long[][] even = routedTokens(plain), skew = routedTokens(skewed);
    boolean[] moe = isMoe();
    Placement initial = Placement.initial(moe, config.nRoutedExperts(), 2, 2);
    for (int layer = 0; layer < moe.length; layer++) {
      if (!moe[layer]) continue;
      int hot = RouterSkew.hotExperts(config.nRoutedExperts(), SEED, "model.layers." + layer + ".mlp.gate.e_score_correction_bias")[0];
      double evenShare = share(even[layer], hot), skewShare = share(skew[layer], hot);
      // top-2 of 8: a hot expert chosen by every token holds half of all assignments; unbiased, about 1/8
      assertThat(skewShare).as("layer %d, hot expert %d, unskewed share %.3f", layer, hot, evenShare).isGreaterThan(0.45);
      assertThat(evenShare).as("layer %d, hot expert %d", layer, hot).isLessThan(0.25);
    }
    double before = ExpertBalancer.balancedness(skew, initial);
    double after = ExpertBalancer.balancedness(skew, ExpertBalancer.rebalance(skew, initial));
    assertThat(before).as("skewed load on the initial placement").isLessThan(0.9);
    assertThat(after).as("after rebalancing, before %.3f", before).isGreaterThanOrEqualTo(0.9);
  }

  @Test
  void skewNeedsTheCorrectionBiasAndANonNegativeValue() {
    assertThatThrownBy(() -> DemoCheckpoint.write(TestCheckpoints.config("tiny"), dir.resolve("x"), SEED, Format.BF16, -1, null))
        .hasMessageContaining("router skew must be a finite number ≥ 0");
  }

  /** Routed tokens per expert over {@link #PROMPTS} seeded random prompts, prefilled one by one. */
  private static long[][] routedTokens(Path checkpoint) {
    var load = new ExpertLoad(isMoe(), config.nRoutedExperts(), 1);
    var rng = new SplittableRandom(SEED);
    try (DeepseekModel model = DeepseekModel.load(checkpoint, Precision.EXACT, kernels, null); TensorArena arena = TensorArena.open()) {
      var counting = new CountingExperts(model.localExperts(), load);
      LatentKvCache cache = model.newCache(arena, PROMPT_LEN / PAGE, PAGE);
      int[] pages = IntStream.range(0, PROMPT_LEN / PAGE).toArray();
      for (int p = 0; p < PROMPTS; p++) {
        int[] tokens = rng.ints(PROMPT_LEN, 2, config.vocabSize()).toArray();
        try (TensorArena scratch = TensorArena.open()) {
          model.forward(ForwardBatch.single(tokens, 0, PROMPT_LEN, pages, false), cache, counting, scratch);
        }
      }
    }
    long[][] tokens = load.snapshot();
    for (int layer = 0; layer < tokens.length; layer++)
      if (tokens[layer] != null)
        assertThat(Arrays.stream(tokens[layer]).sum()).as("layer %d: every prompt token, top-k times", layer)
            .isEqualTo((long) PROMPTS * PROMPT_LEN * config.numExpertsPerTok());
    return tokens;
  }

  private static boolean[] isMoe() {
    boolean[] moe = new boolean[config.numHiddenLayers()];
    for (int layer = 0; layer < moe.length; layer++) moe[layer] = config.isMoeLayer(layer);
    return moe;
  }

  private static double share(long[] tokens, int expert) {
    return (double) tokens[expert] / Arrays.stream(tokens).sum();
  }

  /** The experts in this process, counting what each MoE layer routes. */
  private record CountingExperts(ExpertBackend inner, ExpertLoad load) implements ExpertBackend {
    @Override
    public void routed(Kernels k, int layerId, Tensor out, Tensor x, Routing routing, TensorArena scratch) {
      load.record(layerId, routing);
      inner.routed(k, layerId, out, x, routing, scratch);
    }

    @Override
    public void shared(Kernels k, int layerId, Tensor out, Tensor x, TensorArena scratch) {
      inner.shared(k, layerId, out, x, scratch);
    }
  }
}
