package io.moemesh.model;

import static io.moemesh.model.DeepseekModelTest.NUM_PAGES;
import static io.moemesh.model.DeepseekModelTest.PAGE;
import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.tokenizer.Tokenizer;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/** Running a test model and comparing its logits, for the model's tests: prefill, decode, MTP drafts, token texts. */
final class ModelRuns {
  private ModelRuns() {}

  /** Logits of every row of one prefill of {@code tokens} from position 0, on a fresh cache. */
  static float[][] prefill(DeepseekModel model, int[] tokens) {
    try (TensorArena arena = TensorArena.open()) {
      LatentKvCache cache = model.newCache(arena, NUM_PAGES, PAGE);
      return rows(model.forward(ForwardBatch.single(tokens, 0, tokens.length, pages(tokens.length), true), cache, arena).logits());
    }
  }

  /** A prefill of the first {@code promptLength} tokens, then one decode step per token through the KV cache. */
  static float[][] prefillThenDecode(DeepseekModel model, int[] tokens, int promptLength) {
    float[][] logits = new float[tokens.length][];
    int[] table = pages(tokens.length);
    try (TensorArena arena = TensorArena.open()) {
      LatentKvCache cache = model.newCache(arena, NUM_PAGES, PAGE);
      var prompt = ForwardBatch.single(Arrays.copyOf(tokens, promptLength), 0, promptLength, table, true);
      System.arraycopy(rows(model.forward(prompt, cache, arena).logits()), 0, logits, 0, promptLength);
      for (int t = promptLength; t < tokens.length; t++) {
        try (TensorArena scratch = TensorArena.confined()) {
          var step = ForwardBatch.single(new int[] {tokens[t]}, t, promptLength, table, true);
          logits[t] = rows(model.forward(step, cache, scratch).logits())[0];
        }
      }
    }
    return logits;
  }

  /**
   * Draft logits of MTP module 0 for rows 0…T-1 (T = tokens.length − 1): one main-model prefill, then one MTP
   * pass whose row i sees the main model's hidden state h_i and the next token {@code tokens[i + 1]}.
   */
  static float[][] mtpOneShot(DeepseekModel model, int[] tokens) {
    int T = tokens.length - 1;
    try (TensorArena arena = TensorArena.open()) {
      LatentKvCache cache = model.newCache(arena, NUM_PAGES, PAGE);
      var out = model.forward(ForwardBatch.single(Arrays.copyOf(tokens, T), 0, T, pages(T), true), cache, arena);
      var draft = ForwardBatch.single(Arrays.copyOfRange(tokens, 1, T + 1), 0, T, pages(T), true);
      return rows(model.forwardMtp(0, draft, out.hidden(), cache, arena));
    }
  }

  /** {@link #mtpOneShot} with the first {@code promptLength} rows prefilled, then main model and MTP row by row. */
  static float[][] mtpIncremental(DeepseekModel model, int[] tokens, int promptLength) {
    int T = tokens.length - 1;
    float[][] logits = new float[T][];
    int[] table = pages(T);
    try (TensorArena arena = TensorArena.open()) {
      LatentKvCache cache = model.newCache(arena, NUM_PAGES, PAGE);
      var out = model.forward(ForwardBatch.single(Arrays.copyOf(tokens, promptLength), 0, promptLength, table, true), cache, arena);
      var draft = ForwardBatch.single(Arrays.copyOfRange(tokens, 1, promptLength + 1), 0, promptLength, table, true);
      System.arraycopy(rows(model.forwardMtp(0, draft, out.hidden(), cache, arena)), 0, logits, 0, promptLength);
      for (int t = promptLength; t < T; t++) {
        try (TensorArena scratch = TensorArena.confined()) {
          var step = model.forward(ForwardBatch.single(new int[] {tokens[t]}, t, promptLength, table, true), cache, scratch);
          var draftStep = ForwardBatch.single(new int[] {tokens[t + 1]}, t, promptLength, table, true);
          logits[t] = rows(model.forwardMtp(0, draftStep, step.hidden(), cache, scratch))[0];
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

  private static final String[] TEXTS = {
      "We hold these truths to be self-evident, that all men are created equal, that they are endowed by their "
          + "Creator with certain unalienable Rights, that among these are Life, Liberty and the pursuit of Happiness. ",
      "道可道，非常道。名可名，非常名。无名天地之始；有名万物之母。故常无欲，以观其妙；常有欲，以观其徼。 ",
      "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a  # 🙂 done\n"};

  /** {@code length} tokens of a bundled text (repeated as needed), tokenized by the model's own tokenizer. */
  static int[] textTokens(DeepseekModel model, int which, int length) {
    try (var tokenizer = Tokenizer.load(model.directory())) {
      int[] ids = tokenizer.encode(TEXTS[which % TEXTS.length].repeat(40));
      return Arrays.copyOf(ids, length);
    }
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

  /** The largest absolute difference, and the largest |expected| it is measured against. */
  record Diff(double maxAbs, double maxExpected) {
    double relative() {
      return maxAbs / maxExpected;
    }
  }

  static Diff diff(float[][] actual, double[][] expected) {
    assertThat(actual.length).as("rows").isEqualTo(expected.length);
    double maxAbs = 0, maxExpected = 0;
    for (int t = 0; t < actual.length; t++) {
      assertThat(actual[t]).hasSize(expected[t].length);
      for (int i = 0; i < actual[t].length; i++) {
        if (!Float.isFinite(actual[t][i])) throw new AssertionError("logit " + i + " of row " + t + " is " + actual[t][i]);
        maxAbs = Math.max(maxAbs, Math.abs(actual[t][i] - expected[t][i]));
        maxExpected = Math.max(maxExpected, Math.abs(expected[t][i]));
      }
    }
    return new Diff(maxAbs, maxExpected);
  }

  static Diff diff(float[][] actual, float[][] expected) {
    double[][] widened = new double[expected.length][];
    for (int t = 0; t < widened.length; t++) {
      widened[t] = new double[expected[t].length];
      for (int i = 0; i < widened[t].length; i++) widened[t][i] = expected[t][i];
    }
    return diff(actual, widened);
  }
}
