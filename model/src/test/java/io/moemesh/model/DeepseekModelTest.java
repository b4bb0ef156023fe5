package io.moemesh.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.kernels.NativeKernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.demo.DemoCheckpoint.Format;
import io.moemesh.model.reference.NaiveDeepseek;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The forward pass of {@link DeepseekModel} on seeded demo checkpoints of the tiny config (small for the INT8
 * agreement): against {@link NaiveDeepseek} (independent, float64, unabsorbed MLA), against itself across the
 * prefill/decode forms, FP8/BF16 checkpoints, batching and chunking, and in INT8.
 *
 * <p>Tolerances are relative to the largest |logit| of the compared rows; measured figures are in the comments.
 */
class DeepseekModelTest {
  static final long SEED = 7;
  static final int PAGE = 16;
  static final int NUM_PAGES = 40; // 640 positions; tiny allows 512

  @TempDir static Path dir;
  static NativeKernels kernels;
  static Path tinyBf16, tinyFp8, tinyFp8AsBf16;
  static final Map<String, DeepseekModel> models = new HashMap<>();

  @BeforeAll
  static void writeCheckpoints() {
    kernels = NativeKernels.create(2);
    tinyBf16 = TestCheckpoints.demo(dir, "tiny", Format.BF16, SEED);
    tinyFp8 = TestCheckpoints.demo(dir, "tiny", Format.FP8, SEED);
    tinyFp8AsBf16 = TestCheckpoints.bf16Twin(tinyFp8, dir.resolve("tiny-fp8-as-bf16"));
  }

  @AfterAll
  static void close() {
    models.values().forEach(DeepseekModel::close);
    kernels.close();
  }

  static DeepseekModel model(Path checkpoint, Precision precision) {
    return models.computeIfAbsent(checkpoint + "/" + precision, k -> DeepseekModel.load(checkpoint, precision, kernels, null));
  }

  @Nested
  class MatchesNaiveReference {
    @Test
    void exactLogitsOfEveryPromptRowOnBf16() {
      int[] prompt = randomTokens(1024, 21, 1);
      Diff d = diff(prefill(model(tinyBf16, Precision.EXACT), prompt), NaiveDeepseek.load(tinyBf16).forward(prompt).logits());
      report("exact vs naive, BF16", d);
      assertThat(d.relative()).isLessThan(1e-5);
    }

    @Test
    void exactLogitsOfEveryPromptRowOnFp8() {
      int[] prompt = randomTokens(1024, 21, 2);
      Diff d = diff(prefill(model(tinyFp8, Precision.EXACT), prompt), NaiveDeepseek.load(tinyFp8).forward(prompt).logits());
      report("exact vs naive, FP8", d);
      assertThat(d.relative()).isLessThan(1e-5);
    }

    @Test
    void absorbedDecodeMatchesTheNaiveForm() {
      int[] tokens = randomTokens(1024, 24, 3);
      Diff d = diff(prefillThenDecode(model(tinyBf16, Precision.EXACT), tokens, 8), NaiveDeepseek.load(tinyBf16).forward(tokens).logits());
      report("exact decode vs naive", d);
      assertThat(d.relative()).isLessThan(1e-5);
    }

    @ParameterizedTest
    @EnumSource(value = Precision.class, names = {"BF16", "INT8"})
    void reducedPrecisionsStayClose(Precision precision) {
      int[] prompt = randomTokens(1024, 21, 4);
      Diff d = diff(prefill(model(tinyBf16, precision), prompt), NaiveDeepseek.load(tinyBf16).forward(prompt).logits());
      report(precision + " vs naive", d);
      assertThat(d.relative()).isLessThan(precision == Precision.INT8 ? 0.1 : 0.02);
    }
  }

  @Nested
  class PrefillThenDecode {
    @ParameterizedTest
    @EnumSource(Precision.class)
    void eachDecodeStepMatchesTheOneShotPrefill(Precision precision) {
      DeepseekModel model = model(tinyBf16, precision);
      int[] tokens = randomTokens(1024, 30, 5);
      float[][] oneShot = prefill(model, tokens);
      float[][] stepwise = prefillThenDecode(model, tokens, 12);
      assertThat(Arrays.copyOf(stepwise, 12)).isDeepEqualTo(Arrays.copyOf(oneShot, 12)); // the same prefill
      Diff d = diff(stepwise, oneShot);
      report("decode vs prefill, " + precision, d);
      assertThat(d.relative()).isLessThan(precision == Precision.EXACT ? 1e-5 : 0.05);
    }
  }

  @Nested
  class Fp8Checkpoints {
    @ParameterizedTest
    @EnumSource(Precision.class)
    void fp8AndItsDequantizedBf16TwinGiveIdenticalLogits(Precision precision) {
      int[] tokens = randomTokens(1024, 20, 6);
      float[][] fp8 = prefillThenDecode(model(tinyFp8, precision), tokens, 14);
      float[][] bf16 = prefillThenDecode(model(tinyFp8AsBf16, precision), tokens, 14);
      assertThat(bf16).isDeepEqualTo(fp8);
    }
  }

  @Nested
  class Int8 {
    @Test
    void agreesWithExactOnTheTop1TokenOnTiny() {
      assertTop1Agreement(tinyBf16, 1024, 4, 80);
    }

    @Test
    void agreesWithExactOnTheTop1TokenOnSmall() {
      long t0 = System.nanoTime();
      Path small = TestCheckpoints.demo(dir, "small", Format.BF16, SEED);
      System.out.printf("write small %.1f s%n", (System.nanoTime() - t0) / 1e9);
      assertTop1Agreement(small, 32768, 3, 100);
    }

    void assertTop1Agreement(Path checkpoint, int vocab, int prompts, int length) {
      int agree = 0, total = 0;
      long t0 = System.nanoTime();
      DeepseekModel exactModel = model(checkpoint, Precision.EXACT);
      System.out.printf("load exact %.1f s%n", (System.nanoTime() - t0) / 1e9);
      t0 = System.nanoTime();
      DeepseekModel int8Model = model(checkpoint, Precision.INT8);
      System.out.printf("load int8 %.1f s%n", (System.nanoTime() - t0) / 1e9);
      t0 = System.nanoTime();
      for (int p = 0; p < prompts; p++) {
        int[] tokens = randomTokens(vocab, length, 100 + p);
        float[][] exact = prefill(exactModel, tokens);
        float[][] int8 = prefill(int8Model, tokens);
        for (int t = 0; t < tokens.length; t++, total++) {
          if (argmax(exact[t]) == argmax(int8[t])) agree++;
          else {
            float[] s = exact[t].clone(); Arrays.sort(s);
            System.out.printf("mismatch at %d/%d: exact gap top1-top2 %.4f, int8 diff %.4f%n", p, t, s[s.length-1]-s[s.length-2], diff(new float[][]{int8[t]}, new float[][]{exact[t]}).maxAbs());
          }
        }
      }
      System.out.printf("forward %.1f s%n", (System.nanoTime() - t0) / 1e9);
      System.out.printf("int8 top-1 agreement %s: %d/%d%n", checkpoint.getFileName(), agree, total);
      assertThat((double) agree / total).isGreaterThanOrEqualTo(0.99);
    }
  }

  @Nested
  class BatchInvariance {
    @ParameterizedTest
    @EnumSource(Precision.class)
    void twoSequencesInOneBatchGiveTheLogitsOfEachAlone(Precision precision) {
      DeepseekModel model = model(tinyBf16, precision);
      int[] a = randomTokens(1024, 19, 7), b = randomTokens(1024, 33, 8);
      int[] pagesA = {5, 0}, pagesB = {1, 7, 3};
      float[][] together;
      try (TensorArena arena = TensorArena.open()) {
        LatentKvCache cache = model.newCache(arena, NUM_PAGES, PAGE);
        int[] positions = IntStream.concat(IntStream.range(0, a.length), IntStream.range(0, b.length)).toArray();
        var batch = new ForwardBatch(concat(a, b), positions, List.of(
            new ForwardBatch.SequenceChunk(0, a.length, a.length, pagesA),
            new ForwardBatch.SequenceChunk(a.length, b.length, b.length, pagesB)), IntStream.range(0, a.length + b.length).toArray());
        together = rows(model.forward(batch, cache, arena).logits());
      }
      assertThat(Arrays.copyOfRange(together, 0, a.length)).isDeepEqualTo(prefill(model, a));
      assertThat(Arrays.copyOfRange(together, a.length, a.length + b.length)).isDeepEqualTo(prefill(model, b));
    }

    @ParameterizedTest
    @EnumSource(Precision.class)
    void chunkedPrefillGivesTheLogitsOfTheOneShotPrefill(Precision precision) {
      DeepseekModel model = model(tinyBf16, precision);
      int[] prompt = randomTokens(1024, 23, 9);
      float[][] chunked = new float[prompt.length][];
      try (TensorArena arena = TensorArena.open()) {
        LatentKvCache cache = model.newCache(arena, NUM_PAGES, PAGE);
        for (int start = 0; start < prompt.length; start += 5) {
          int[] chunk = Arrays.copyOfRange(prompt, start, Math.min(prompt.length, start + 5));
          float[][] logits = rows(model.forward(ForwardBatch.single(chunk, start, prompt.length, pages(prompt.length), true), cache, arena).logits());
          System.arraycopy(logits, 0, chunked, start, chunk.length);
        }
      }
      assertThat(chunked).isDeepEqualTo(prefill(model, prompt));
    }
  }

  @Nested
  class BadInput {
    @Test
    void tokenOutsideTheVocabularyIsAnError() {
      DeepseekModel model = model(tinyBf16, Precision.EXACT);
      try (TensorArena arena = TensorArena.open()) {
        LatentKvCache cache = model.newCache(arena, 2, PAGE);
        assertThatThrownBy(() -> model.forward(ForwardBatch.single(new int[] {3, 1024}, 0, 2, new int[] {0}, true), cache, arena))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1024").hasMessageContaining("vocabulary");
        assertThatThrownBy(() -> model.forward(ForwardBatch.single(new int[] {-1}, 0, 1, new int[] {0}, true), cache, arena))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1").hasMessageContaining("vocabulary");
      }
    }
  }

  // ---- running the model ------------------------------------------------------------------------------------

  /** Logits of every row of one prefill of {@code tokens} from position 0. */
  static float[][] prefill(DeepseekModel model, int[] tokens) {
    try (TensorArena arena = TensorArena.open()) {
      LatentKvCache cache = model.newCache(arena, NUM_PAGES, PAGE);
      return rows(model.forward(ForwardBatch.single(tokens, 0, tokens.length, pages(tokens.length), true), cache, arena).logits());
    }
  }

  /** Prefill of the first {@code promptLength} tokens, then one decode step per token through the KV cache. */
  static float[][] prefillThenDecode(DeepseekModel model, int[] tokens, int promptLength) {
    float[][] logits = new float[tokens.length][];
    int[] table = pages(tokens.length);
    try (TensorArena arena = TensorArena.open()) {
      LatentKvCache cache = model.newCache(arena, NUM_PAGES, PAGE);
      int[] prompt = Arrays.copyOf(tokens, promptLength);
      float[][] first = rows(model.forward(ForwardBatch.single(prompt, 0, promptLength, table, true), cache, arena).logits());
      System.arraycopy(first, 0, logits, 0, promptLength);
      for (int t = promptLength; t < tokens.length; t++) {
        try (TensorArena scratch = TensorArena.confined()) {
          var step = ForwardBatch.single(new int[] {tokens[t]}, t, promptLength, table, true);
          logits[t] = rows(model.forward(step, cache, scratch).logits())[0];
        }
      }
    }
    return logits;
  }

  static int[] pages(int positions) {
    return IntStream.range(0, (positions + PAGE - 1) / PAGE).toArray();
  }

  static float[][] rows(Tensor t) {
    float[] all = t.toFloatArray();
    int n = t.dim(0), m = t.dim(1);
    float[][] out = new float[n][];
    for (int i = 0; i < n; i++) out[i] = Arrays.copyOfRange(all, i * m, (i + 1) * m);
    return out;
  }

  static int[] randomTokens(int vocab, int n, long seed) {
    return new SplittableRandom(seed).ints(n, 0, vocab).toArray();
  }

  static int[] concat(int[] a, int[] b) {
    return IntStream.concat(Arrays.stream(a), Arrays.stream(b)).toArray();
  }

  static int argmax(float[] v) {
    int best = 0;
    for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
    return best;
  }

  /** The largest absolute difference and the largest |expected| over all compared elements. */
  record Diff(double maxAbs, double maxExpected) {
    double relative() {
      return maxAbs / maxExpected;
    }
  }

  static Diff diff(float[][] actual, double[][] expected) {
    assertThat(actual.length).isEqualTo(expected.length);
    double maxAbs = 0, maxExpected = 0;
    for (int t = 0; t < actual.length; t++) {
      assertThat(actual[t]).hasSize(expected[t].length);
      for (int i = 0; i < actual[t].length; i++) {
        assertThat(Float.isFinite(actual[t][i])).as("finite logit").isTrue();
        maxAbs = Math.max(maxAbs, Math.abs(actual[t][i] - expected[t][i]));
        maxExpected = Math.max(maxExpected, Math.abs(expected[t][i]));
      }
    }
    return new Diff(maxAbs, maxExpected);
  }

  static Diff diff(float[][] actual, float[][] expected) {
    double[][] e = new double[expected.length][];
    for (int t = 0; t < e.length; t++) {
      e[t] = new double[expected[t].length];
      for (int i = 0; i < e[t].length; i++) e[t][i] = expected[t][i];
    }
    return diff(actual, e);
  }

  static void report(String what, Diff d) {
    System.out.printf("%s: max abs %.3e, max |logit| %.3f, relative %.3e%n", what, d.maxAbs(), d.maxExpected(), d.relative());
  }
}
