package io.moemesh.model;

import static io.moemesh.model.ModelRuns.*;
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
 * The forward pass of {@link DeepseekModel} on seeded demo checkpoints of the tiny config (the small one for the
 * INT8 agreement): against {@link NaiveDeepseek} (independent, float64, unabsorbed MLA), and against itself across
 * the prefill and decode forms, FP8 and BF16 checkpoints, batching, chunking and precisions.
 *
 * <p>Tolerances bound the largest absolute logit difference relative to the largest |logit| of the compared rows.
 * "Float32 noise" is 2e-6 of it: measured figures (seed 7, AVX-512 kernels) are 1.7e-7 to 3.1e-7.
 */
class DeepseekModelTest {
  static final long SEED = 7;
  static final int TINY_VOCAB = 1024;
  static final int PAGE = 16;
  static final int NUM_PAGES = 40;
  /** Exact mode against float64 or against itself in another form: float32 noise only. */
  static final double FLOAT32_NOISE = 2e-6;

  @TempDir static Path dir;
  static NativeKernels kernels;
  static Path tinyBf16, tinyFp8, tinyFp8AsBf16;
  static final Map<String, DeepseekModel> models = new HashMap<>();
  static final Map<Path, NaiveDeepseek> naives = new HashMap<>();

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

  static NaiveDeepseek naive(Path checkpoint) {
    return naives.computeIfAbsent(checkpoint, NaiveDeepseek::load);
  }

  @Nested
  class MatchesTheNaiveReference {
    @Test
    void exactLogitsOfEveryPromptRowOnABf16Checkpoint() {
      int[] prompt = randomTokens(TINY_VOCAB, 21, 1);
      Diff d = diff(prefill(model(tinyBf16, Precision.EXACT), prompt), naive(tinyBf16).forward(prompt).logits());
      assertThat(d.relative()).isLessThan(FLOAT32_NOISE); // measured 2.1e-7 (2.5e-6 of 11.6)
    }

    @Test
    void exactLogitsOfEveryPromptRowOnAnFp8Checkpoint() {
      int[] prompt = randomTokens(TINY_VOCAB, 21, 2);
      Diff d = diff(prefill(model(tinyFp8, Precision.EXACT), prompt), naive(tinyFp8).forward(prompt).logits());
      assertThat(d.relative()).isLessThan(FLOAT32_NOISE); // measured 1.7e-7 (2.0e-6 of 12.0)
    }

    @Test
    void absorbedDecodeStepsMatchTheNaiveForm() {
      int[] tokens = randomTokens(TINY_VOCAB, 24, 3);
      Diff d = diff(prefillThenDecode(model(tinyBf16, Precision.EXACT), tokens, 8), naive(tinyBf16).forward(tokens).logits());
      assertThat(d.relative()).isLessThan(FLOAT32_NOISE); // measured 1.8e-7 (2.3e-6 of 12.5)
    }

    @ParameterizedTest
    @EnumSource(value = Precision.class, names = {"BF16", "INT8"})
    void reducedPrecisionsStayClose(Precision precision) {
      int[] prompt = randomTokens(TINY_VOCAB, 21, 4);
      Diff d = diff(prefill(model(tinyBf16, precision), prompt), naive(tinyBf16).forward(prompt).logits());
      // measured: BF16 (KV cache rounding only) 9.3e-4, INT8 1.2e-2
      assertThat(d.relative()).isLessThan(precision == Precision.INT8 ? 0.06 : 0.005);
    }
  }

  @Nested
  class PrefillThenDecode {
    @ParameterizedTest
    @EnumSource(Precision.class)
    void eachDecodeStepMatchesTheOneShotPrefillRow(Precision precision) {
      DeepseekModel model = model(tinyBf16, precision);
      int[] tokens = randomTokens(TINY_VOCAB, 30, 5);
      float[][] oneShot = prefill(model, tokens), stepwise = prefillThenDecode(model, tokens, 12);
      assertThat(Arrays.copyOf(stepwise, 12)).isDeepEqualTo(Arrays.copyOf(oneShot, 12));
      // measured: EXACT 2.1e-7 (both forms read the same cache); BF16 1.9e-3 (activations are rounded to BF16
      // before BF16 matmuls, which turns the two forms' float32 noise into occasional BF16 steps); INT8 1.0e-2
      // (the naive form expands keys with INT8 kv_b, the absorbed one multiplies by BF16 W_UK / W_UV)
      double tolerance = switch (precision) {
        case EXACT -> FLOAT32_NOISE;
        case BF16 -> 0.01;
        case INT8 -> 0.05;
      };
      assertThat(diff(stepwise, oneShot).relative()).isLessThan(tolerance);
    }
  }

  @Nested
  class Fp8Checkpoints {
    /** Power-of-two block scales make the dequantization exact, so both hold the same numbers. */
    @ParameterizedTest
    @EnumSource(Precision.class)
    void anFp8CheckpointAndItsDequantizedBf16TwinGiveIdenticalLogits(Precision precision) {
      int[] tokens = randomTokens(TINY_VOCAB, 20, 6);
      float[][] fp8 = prefillThenDecode(model(tinyFp8, precision), tokens, 14);
      float[][] twin = prefillThenDecode(model(tinyFp8AsBf16, precision), tokens, 14);
      if (precision == Precision.EXACT) {
        // The same numbers, but EXACT keeps dequantized FP8 as F32 matrices and the twin as BF16 ones, and the
        // kernels sum BF16 weights in another order (they widen them in even/odd halves): float noise apart.
        assertThat(diff(twin, fp8).relative()).isLessThan(FLOAT32_NOISE);
      } else {
        assertThat(twin).isDeepEqualTo(fp8); // both load as BF16 (or INT8 from the same values): bit for bit
      }
    }
  }

  @Nested
  class Int8 {
    @Test
    void agreesWithExactOnTheTop1TokenOnTiny() {
      assertTop1Agreement(model(tinyBf16, Precision.EXACT), model(tinyBf16, Precision.INT8), 4, 80);
    }

    @Test
    void agreesWithExactOnTheTop1TokenOnSmall() {
      Path small = TestCheckpoints.demo(dir, "small", Format.BF16, SEED);
      try (DeepseekModel exact = DeepseekModel.load(small, Precision.EXACT, kernels, null);
          DeepseekModel int8 = DeepseekModel.load(small, Precision.INT8, kernels, null)) {
        assertTop1Agreement(exact, int8, 3, 100);
      }
    }

    /**
     * Teacher-forced: every row of real text (as prompts are: never the tokenizer's placeholder ids), greedy
     * top-1 of INT8 against EXACT.
     */
    void assertTop1Agreement(DeepseekModel exact, DeepseekModel int8, int prompts, int length) {
      int agree = 0, total = 0;
      for (int p = 0; p < prompts; p++) {
        int[] tokens = textTokens(exact, p, length);
        float[][] expected = prefill(exact, tokens), actual = prefill(int8, tokens);
        for (int t = 0; t < length; t++, total++) if (argmax(actual[t]) == argmax(expected[t])) agree++;
      }
      assertThat((double) agree / total).as("INT8 top-1 agrees with EXACT at %d of %d positions", agree, total)
          .isGreaterThanOrEqualTo(0.99);
    }
  }

  @Nested
  class BatchInvariance {
    @ParameterizedTest
    @EnumSource(Precision.class)
    void twoPromptsInOneBatchGiveTheLogitsOfEachAlone(Precision precision) {
      DeepseekModel model = model(tinyBf16, precision);
      int[] a = randomTokens(TINY_VOCAB, 19, 7), b = randomTokens(TINY_VOCAB, 33, 8);
      float[][] together;
      try (TensorArena arena = TensorArena.open()) {
        LatentKvCache cache = model.newCache(arena, NUM_PAGES, PAGE);
        int[] positions = IntStream.concat(IntStream.range(0, a.length), IntStream.range(0, b.length)).toArray();
        var batch = new ForwardBatch(concat(a, b), positions, List.of(
            new ForwardBatch.SequenceChunk(0, a.length, a.length, new int[] {5, 0}),
            new ForwardBatch.SequenceChunk(a.length, b.length, b.length, new int[] {1, 7, 3})),
            IntStream.range(0, a.length + b.length).toArray());
        together = rows(model.forward(batch, cache, arena).logits());
      }
      assertThat(Arrays.copyOfRange(together, 0, a.length)).isDeepEqualTo(prefill(model, a));
      assertThat(Arrays.copyOfRange(together, a.length, a.length + b.length)).isDeepEqualTo(prefill(model, b));
    }

    @ParameterizedTest
    @EnumSource(Precision.class)
    void aDecodeStepBatchedWithAnotherPromptGivesTheLogitsOfEachAlone(Precision precision) {
      DeepseekModel model = model(tinyBf16, precision);
      int[] a = randomTokens(TINY_VOCAB, 18, 13), b = randomTokens(TINY_VOCAB, 11, 14);
      int[] pagesA = {2, 6};
      float[] decodeRow;
      float[][] promptRows;
      try (TensorArena arena = TensorArena.open()) {
        LatentKvCache cache = model.newCache(arena, NUM_PAGES, PAGE);
        model.forward(ForwardBatch.single(Arrays.copyOf(a, 17), 0, 17, pagesA, false), cache, arena);
        int[] positions = IntStream.concat(IntStream.of(17), IntStream.range(0, b.length)).toArray();
        var batch = new ForwardBatch(concat(new int[] {a[17]}, b), positions, List.of(
            new ForwardBatch.SequenceChunk(0, 1, 17, pagesA),
            new ForwardBatch.SequenceChunk(1, b.length, b.length, new int[] {4})),
            IntStream.range(0, 1 + b.length).toArray());
        float[][] together = rows(model.forward(batch, cache, arena).logits());
        decodeRow = together[0];
        promptRows = Arrays.copyOfRange(together, 1, together.length);
      }
      assertThat(decodeRow).isEqualTo(prefillThenDecode(model, a, 17)[17]);
      assertThat(promptRows).isDeepEqualTo(prefill(model, b));
    }

    /** Decode rows split by a prompt chunk: the absorbed rows are packed for one attention call, then unpacked. */
    @ParameterizedTest
    @EnumSource(Precision.class)
    void decodeStepsOnEitherSideOfAPromptGiveTheLogitsOfEachAlone(Precision precision) {
      DeepseekModel model = model(tinyBf16, precision);
      int[] a = randomTokens(TINY_VOCAB, 18, 15), b = randomTokens(TINY_VOCAB, 9, 16), c = randomTokens(TINY_VOCAB, 40, 17);
      int[] pagesA = {2, 6}, pagesC = {8, 9, 10};
      float[][] together;
      try (TensorArena arena = TensorArena.open()) {
        LatentKvCache cache = model.newCache(arena, NUM_PAGES, PAGE);
        model.forward(ForwardBatch.single(Arrays.copyOf(a, 17), 0, 17, pagesA, false), cache, arena);
        model.forward(ForwardBatch.single(Arrays.copyOf(c, 39), 0, 39, pagesC, false), cache, arena);
        int[] positions = IntStream.concat(IntStream.concat(IntStream.of(17), IntStream.range(0, b.length)), IntStream.of(39)).toArray();
        var batch = new ForwardBatch(concat(concat(new int[] {a[17]}, b), new int[] {c[39]}), positions, List.of(
            new ForwardBatch.SequenceChunk(0, 1, 17, pagesA),
            new ForwardBatch.SequenceChunk(1, b.length, b.length, new int[] {4}),
            new ForwardBatch.SequenceChunk(1 + b.length, 1, 39, pagesC)),
            IntStream.range(0, 2 + b.length).toArray());
        together = rows(model.forward(batch, cache, arena).logits());
      }
      assertThat(together[0]).isEqualTo(prefillThenDecode(model, a, 17)[17]);
      assertThat(Arrays.copyOfRange(together, 1, 1 + b.length)).isDeepEqualTo(prefill(model, b));
      assertThat(together[1 + b.length]).isEqualTo(prefillThenDecode(model, c, 39)[39]);
    }

    @ParameterizedTest
    @EnumSource(Precision.class)
    void aPromptPrefilledInChunksOfFiveGivesTheLogitsOfTheOneShotPrefill(Precision precision) {
      DeepseekModel model = model(tinyBf16, precision);
      int[] prompt = randomTokens(TINY_VOCAB, 23, 9);
      float[][] chunked = new float[prompt.length][];
      try (TensorArena arena = TensorArena.open()) {
        LatentKvCache cache = model.newCache(arena, NUM_PAGES, PAGE);
        for (int start = 0; start < prompt.length; start += 5) {
          int[] chunk = Arrays.copyOfRange(prompt, start, Math.min(prompt.length, start + 5));
          var batch = ForwardBatch.single(chunk, start, prompt.length, pages(prompt.length), true);
          System.arraycopy(rows(model.forward(batch, cache, arena).logits()), 0, chunked, start, chunk.length);
        }
      }
      assertThat(chunked).isDeepEqualTo(prefill(model, prompt));
    }
  }

  @Nested
  class MultiTokenPrediction {
    @Test
    void draftLogitsAreDeterministicAndFinite() {
      DeepseekModel model = model(tinyBf16, Precision.INT8);
      int[] tokens = randomTokens(TINY_VOCAB, 17, 10);
      float[][] first = mtpOneShot(model, tokens);
      assertThat(first).hasNumberOfRows(16);
      for (float[] row : first) {
        assertThat(row).hasSize(TINY_VOCAB);
        for (float v : row) assertThat(Float.isFinite(v)).isTrue();
      }
      assertThat(mtpOneShot(model, tokens)).isDeepEqualTo(first);
    }

    @Test
    void anMtpHeadOfItsOwnStaysItsOwn() { // the random demo checkpoint's MTP head differs from lm_head
      assertThat(model(tinyBf16, Precision.EXACT).mtpSharesHead(0)).isFalse();
      assertThat(model(tinyBf16, Precision.EXACT).mtpSharesEmbedding(0)).isFalse();
    }

    @Test
    void exactDraftLogitsMatchTheNaiveMtpModule() {
      int[] tokens = randomTokens(TINY_VOCAB, 21, 11);
      NaiveDeepseek naive = naive(tinyBf16);
      double[][] expected = naive.forwardMtp(Arrays.copyOfRange(tokens, 1, 21), naive.forward(Arrays.copyOf(tokens, 20)).hidden());
      assertThat(diff(mtpOneShot(model(tinyBf16, Precision.EXACT), tokens), expected).relative())
          .isLessThan(FLOAT32_NOISE); // measured 2.0e-7
    }

    /**
     * An MTP pass that wants some rows' drafts runs only those through the block and the head, the rest only to their
     * KV: the same bits as a pass of every row, in the cache and in the rows wanted (prompt rows, then decode rows).
     */
    @ParameterizedTest
    @EnumSource(Precision.class)
    void anMtpPassOfSomeRowsHasTheBitsOfAPassOfEveryRow(Precision precision) {
      DeepseekModel model = model(tinyBf16, precision);
      int[] tokens = randomTokens(TINY_VOCAB, 22, 13);
      int T = 20, prompt = 12, mtpLayer = model.config().numHiddenLayers();
      int[][] wantedRows = {{T - 1}, {T - 1, 5}, {}, {3, 4, 11, 12, T - 1}};
      byte[] everyRowKv;
      float[][] everyRowLogits, everyRowHidden;
      try (TensorArena arena = TensorArena.open()) {
        LatentKvCache cache = model.newCache(arena, NUM_PAGES, PAGE);
        var out = model.forward(ForwardBatch.single(Arrays.copyOf(tokens, T), 0, prompt, pages(T), true), cache, arena);
        var all = model.draftMtp(0, ForwardBatch.single(Arrays.copyOfRange(tokens, 1, T + 1), 0, prompt, pages(T), true), out.hidden(), cache,
            model.localExperts(), arena);
        everyRowKv = cache.readRows(mtpLayer, pages(T), 0, T);
        everyRowLogits = rows(all.logits());
        everyRowHidden = rows(all.hidden());
      }
      for (int[] wanted : wantedRows) {
        try (TensorArena arena = TensorArena.open()) {
          LatentKvCache cache = model.newCache(arena, NUM_PAGES, PAGE);
          var out = model.forward(ForwardBatch.single(Arrays.copyOf(tokens, T), 0, prompt, pages(T), true), cache, arena);
          int[] next = Arrays.copyOfRange(tokens, 1, T + 1), positions = java.util.stream.IntStream.range(0, T).toArray();
          var batch = new ForwardBatch(next, positions, List.of(new ForwardBatch.SequenceChunk(0, T, prompt, pages(T))), wanted);
          var some = model.draftMtp(0, batch, out.hidden(), cache, model.localExperts(), arena);
          assertThat(cache.readRows(mtpLayer, pages(T), 0, T)).as("KV, rows %s wanted", Arrays.toString(wanted)).isEqualTo(everyRowKv);
          float[][] logits = rows(some.logits()), hidden = rows(some.hidden());
          assertThat(logits.length).isEqualTo(wanted.length);
          for (int i = 0; i < wanted.length; i++) {
            assertThat(logits[i]).as("logits of row %d", wanted[i]).containsExactly(everyRowLogits[wanted[i]]);
            assertThat(hidden[i]).as("hidden state of row %d", wanted[i]).containsExactly(everyRowHidden[wanted[i]]);
          }
        }
      }
    }

    /** A draft vocabulary of n ids gives the first n columns of the whole vocabulary's draft logits, bit for bit. */
    @ParameterizedTest
    @EnumSource(Precision.class)
    void aDraftVocabularyGivesTheFirstColumnsOfTheDraftLogits(Precision precision) {
      DeepseekModel model = model(tinyBf16, precision);
      int[] tokens = randomTokens(TINY_VOCAB, 23, 11);
      int T = 10, n = TINY_VOCAB / 3;
      float[][] full = draftLogits(model, tokens, T);
      model.draftVocabulary(n);
      float[][] some;
      try {
        some = draftLogits(model, tokens, T);
      } finally {
        model.draftVocabulary(0); // the model is shared by the tests
      }
      assertThat(model.draftVocabulary()).isEqualTo(TINY_VOCAB);
      for (int r = 0; r < T; r++) assertThat(some[r]).as("row %d", r).containsExactly(Arrays.copyOf(full[r], n));
      assertThatThrownBy(() -> model.draftVocabulary(TINY_VOCAB + 1)).hasMessageContaining("draft vocabulary");
    }

    private float[][] draftLogits(DeepseekModel model, int[] tokens, int T) {
      try (TensorArena arena = TensorArena.open()) {
        LatentKvCache cache = model.newCache(arena, NUM_PAGES, PAGE);
        var out = model.forward(ForwardBatch.single(Arrays.copyOf(tokens, T), 0, T, pages(T), true), cache, arena);
        return rows(model.draftMtp(0, ForwardBatch.single(Arrays.copyOfRange(tokens, 1, T + 1), 0, T, pages(T), true), out.hidden(), cache,
            model.localExperts(), arena).logits());
      }
    }

    @ParameterizedTest
    @EnumSource(Precision.class)
    void incrementalDraftsMatchTheOneShotPrefill(Precision precision) {
      DeepseekModel model = model(tinyBf16, precision);
      int[] tokens = randomTokens(TINY_VOCAB, 25, 12);
      // measured: EXACT 3.1e-7, BF16 1.6e-5 (BF16 KV cache and weights; naive vs absorbed attention), INT8 1.1e-2
      double bound = switch (precision) {
        case EXACT -> FLOAT32_NOISE;
        case BF16 -> 1e-4;
        case INT8 -> 0.05;
      };
      assertThat(diff(mtpIncremental(model, tokens, 9), mtpOneShot(model, tokens)).relative()).isLessThan(bound);
    }
  }
}
