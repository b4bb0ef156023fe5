package io.moemesh.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.kernels.KernelBackend;
import io.moemesh.kernels.Kernels;
import io.moemesh.model.DeepseekModel;
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
 * MTP speculation's speed-up, measured on demand (skipped in the build): {@link ThroughputBench#measure} runs with
 * k = 0, 1, 2 alternated round by round in one process, so a shared machine's drift falls on every k alike. Prints per
 * k the median decode tokens/s and step over the rounds, and the median and range of each round's ratio to k = 0.
 * Asserts nothing but that runs happened.
 *
 * <pre>
 * ./mvnw -o verify -pl bench -am -Dtest=SpeculationAlternationProbeTest -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dmoemesh.spec-alternation=models/demo [-Dmoemesh.spec-alternation.threads=2 -Dmoemesh.spec-alternation.rounds=9
 *     -Dmoemesh.spec-alternation.batches=1,8 -Dmoemesh.spec-alternation.ks=0,1,2 -Dmoemesh.spec-alternation.lengths=64,128]
 * </pre>
 */
class SpeculationAlternationProbeTest {
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
