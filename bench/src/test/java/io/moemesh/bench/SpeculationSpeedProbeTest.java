package io.moemesh.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.KernelBackend;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.NativeKernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.ForwardBatch;
import io.moemesh.model.LatentKvCache;
import io.moemesh.model.Precision;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * MTP speculation's speed-up, measured on demand (skipped in the build). {@link #alternatedSpeculation}: {@link ThroughputBench#measure} runs with
 * k = 0, 1, 2 alternated round by round in one process, so a shared machine's drift falls on every k alike. Prints per
 * k the median decode tokens/s and step over the rounds, and the median and range of each round's ratio to k = 0.
 * Asserts nothing but that runs happened.
 *
 * <pre>
 * ./mvnw -o verify -pl bench -am -Dtest=SpeculationSpeedProbeTest -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dmoemesh.spec-alternation=models/demo [-Dmoemesh.spec-alternation.threads=2 -Dmoemesh.spec-alternation.rounds=9
 *     -Dmoemesh.spec-alternation.batches=1,8 -Dmoemesh.spec-alternation.ks=0,1,2 -Dmoemesh.spec-alternation.lengths=64,128]
 * </pre>
 */
class SpeculationSpeedProbeTest {
  @Test
  void alternatedSpeculation() throws Exception {
    String dir = System.getProperty("moemesh.spec-alternation");
    Assumptions.assumeTrue(dir != null, "on demand: -Dmoemesh.spec-alternation=MODEL_DIR");
    int threads = Integer.getInteger("moemesh.spec-alternation.threads", 2);
    int rounds = Integer.getInteger("moemesh.spec-alternation.rounds", 9);
    int[] batches = ints(System.getProperty("moemesh.spec-alternation.batches", "1,8"));
    int[] ks = ints(System.getProperty("moemesh.spec-alternation.ks", "0,1,2"));
    int[] lengths = ints(System.getProperty("moemesh.spec-alternation.lengths", "64,128"));
    try (Kernels kernels = KernelBackend.NATIVE.open(threads);
        DeepseekModel model = DeepseekModel.load(Path.of(dir), Precision.INT8, kernels, (done, total) -> {})) {
      for (int batch : batches) {
        Map<Integer, List<ThroughputBench.Result>> results = new TreeMap<>();
        for (int k : ks) ThroughputBench.measure(model, batch, lengths[0], lengths[1], 0, k, null, null, Duration.ofSeconds(5), () -> 0);
        for (int round = 0; round < rounds; round++)
          for (int k : ks)
            results.computeIfAbsent(k, x -> new ArrayList<>())
                .add(ThroughputBench.measure(model, batch, lengths[0], lengths[1], 0, k, null, null, Duration.ZERO, () -> 0));
        List<ThroughputBench.Result> plain = results.get(ks[0]);
        for (int k : ks) {
          List<ThroughputBench.Result> runs = results.get(k);
          double[] ratios = new double[rounds], stepRatios = new double[rounds];
          for (int round = 0; round < rounds; round++) {
            ratios[round] = runs.get(round).decodeTokensPerSecond() / plain.get(round).decodeTokensPerSecond();
            stepRatios[round] = runs.get(round).secondsPerDecodeStep() / plain.get(round).secondsPerDecodeStep();
          }
          System.out.printf(Locale.ROOT,
              "%s batch %d, %d thread(s), k=%d: decode %.1f tok/s, step %.3f ms, %.2f tokens a request-step; ÷ k=%d per round: decode %.2f (%.2f-%.2f),"
                  + " step %.2f (%.2f-%.2f); %s%n",
              Path.of(dir).getFileName(), batch, threads, k, median(runs.stream().mapToDouble(ThroughputBench.Result::decodeTokensPerSecond).toArray()),
              1e3 * median(runs.stream().mapToDouble(ThroughputBench.Result::secondsPerDecodeStep).toArray()),
              median(runs.stream().mapToDouble(ThroughputBench.Result::tokensPerRequestStep).toArray()), ks[0], median(ratios), min(ratios),
              max(ratios), median(stepRatios), min(stepRatios), max(stepRatios), runs.getLast().speculation());
          assertThat(runs).hasSize(rounds);
        }
      }
    }
  }

  /**
   * On demand ({@code -Dmoemesh.spec-step=MODEL_DIR}, threads, batch and steps by {@code moemesh.spec-step.threads},
   * {@code .batch}, {@code .steps}): a k = 1 verify step against a plain step, through the model alone, alternated step
   * by step. Each of the batch's requests is at position 100 of a 100-token prompt. A plain step is the main model over
   * each request's token and the argmax of its logits; a verify step the main model over each token and its draft, the
   * argmax of both rows, and the MTP pass over both rows drafting from the last (the draft accepted); the same with the
   * MTP head over a draft vocabulary ({@code .draft-vocabulary}, default 32768 ids, FR-Spec). Prints the medians and
   * their ratios.
   */
  @Test
  void verifyStepAgainstPlainStep() {
    String dir = System.getProperty("moemesh.spec-step");
    Assumptions.assumeTrue(dir != null, "on demand: -Dmoemesh.spec-step=MODEL_DIR");
    int threads = Integer.getInteger("moemesh.spec-step.threads", 2), batch = Integer.getInteger("moemesh.spec-step.batch", 1);
    int steps = Integer.getInteger("moemesh.spec-step.steps", 1500), prompt = 100, pagesEach = 8;
    int draftVocabulary = Integer.getInteger("moemesh.spec-step.draft-vocabulary", 32768);
    try (NativeKernels kernels = NativeKernels.create(threads);
        DeepseekModel model = DeepseekModel.load(Path.of(dir), Precision.INT8, kernels, (done, total) -> {});
        TensorArena pool = TensorArena.forModel(); TensorArena scratch = TensorArena.workspace()) {
      LatentKvCache cache = model.newCache(pool, batch * pagesEach, 16);
      int[] tokens = new java.util.SplittableRandom(1).ints(prompt, 300, Math.min(2000, model.config().vocabSize())).toArray();
      for (int b = 0; b < batch; b++) {
        scratch.reset();
        model.forward(ForwardBatch.single(tokens, 0, prompt, pages(b, pagesEach), false), cache, scratch);
      }
      draftVocabulary = Math.min(draftVocabulary, model.config().vocabSize());
      long[] plain = new long[steps], verify = new long[steps], verifyDraftVocabulary = new long[steps];
      for (int pass = 0; pass < 2; pass++) { // the first pass warms the JIT up
        for (int i = 0; i < steps; i++) {
          scratch.reset();
          long t0 = System.nanoTime();
          argmax(kernels, model.forward(decode(batch, 1, prompt, pagesEach, true), cache, scratch).logits(), scratch);
          long t1 = System.nanoTime();
          plain[i] = t1 - t0;
          model.draftVocabulary(0);
          verify[i] = verifyStep(model, kernels, cache, scratch, batch, prompt, pagesEach);
          model.draftVocabulary(draftVocabulary);
          verifyDraftVocabulary[i] = verifyStep(model, kernels, cache, scratch, batch, prompt, pagesEach);
        }
      }
      double p = median(Arrays.stream(plain).asDoubleStream().toArray()) / 1e3, v = median(Arrays.stream(verify).asDoubleStream().toArray()) / 1e3;
      double vd = median(Arrays.stream(verifyDraftVocabulary).asDoubleStream().toArray()) / 1e3;
      System.out.printf(Locale.ROOT, "%s batch %d, %d thread(s): plain step %.1f µs, k=1 verify step %.1f µs, ratio %.2f; drafting over %d of %d ids:"
          + " %.1f µs, ratio %.2f%n", Path.of(dir).getFileName(), batch, threads, p, v, v / p, draftVocabulary, model.config().vocabSize(), vd, vd / p);
      assertThat(p).isPositive();
    }
  }

  /** One k = 1 verify step (the draft accepted): the main model over 2 rows a request, both argmaxes, the MTP pass and its argmax. */
  private static long verifyStep(DeepseekModel model, Kernels kernels, LatentKvCache cache, TensorArena scratch, int batch, int prompt, int pagesEach) {
    scratch.reset();
    long t0 = System.nanoTime();
    var main = model.forward(decode(batch, 2, prompt, pagesEach, true), cache, scratch);
    argmax(kernels, main.logits(), scratch);
    var mtp = model.draftMtp(0, decode(batch, 2, prompt, pagesEach, false), main.hidden(), cache, model.localExperts(), scratch);
    argmax(kernels, mtp.logits(), scratch);
    return System.nanoTime() - t0;
  }

  /** {@code batch} requests of {@code rows} rows each from position {@code position}; logits of every row or each request's last. */
  private static ForwardBatch decode(int batch, int rows, int position, int pagesEach, boolean allLogits) {
    int n = batch * rows;
    int[] tokens = new int[n], positions = new int[n];
    List<ForwardBatch.SequenceChunk> chunks = new ArrayList<>();
    List<Integer> logitRows = new ArrayList<>();
    for (int b = 0; b < batch; b++) {
      for (int j = 0; j < rows; j++) {
        int r = b * rows + j;
        tokens[r] = 400 + b + j;
        positions[r] = position + j;
        if (allLogits || j == rows - 1) logitRows.add(r);
      }
      chunks.add(new ForwardBatch.SequenceChunk(b * rows, rows, position, pages(b, pagesEach)));
    }
    return new ForwardBatch(tokens, positions, chunks, logitRows.stream().mapToInt(Integer::intValue).toArray());
  }

  private static int[] pages(int request, int pagesEach) {
    return java.util.stream.IntStream.range(request * pagesEach, (request + 1) * pagesEach).toArray();
  }

  private static void argmax(Kernels kernels, Tensor logits, TensorArena scratch) {
    Tensor ids = scratch.empty(DType.I32, (int) logits.numRows());
    kernels.argmaxRows(ids, logits);
  }

  private static int[] ints(String csv) {
    return Arrays.stream(csv.split(",")).map(String::trim).mapToInt(Integer::parseInt).toArray();
  }

  private static double median(double[] values) {
    double[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }

  private static double min(double[] values) {
    return Arrays.stream(values).min().orElseThrow();
  }

  private static double max(double[] values) {
    return Arrays.stream(values).max().orElseThrow();
  }
}
