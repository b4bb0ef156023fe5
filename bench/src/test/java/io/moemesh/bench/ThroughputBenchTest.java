package io.moemesh.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.moemesh.kernels.KernelBackend;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.ProfilingKernels;
import io.moemesh.kernels.ProfilingKernels.OpTime;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.Precision;
import io.moemesh.model.demo.DemoCheckpoint;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code bench throughput}'s measured run, on the shipped tiny model (a 1024-token vocabulary) through the real engine. */
class ThroughputBenchTest {

  @Test
  void measuresAFullBatchDecodeAgainstTheTriadTakenRightBeforeAndAfter() throws Exception {
    Path dir = Files.createTempDirectory("moemesh-bench-test").resolve("tiny");
    DemoCheckpoint.writeShipped("tiny", dir, 7, DemoCheckpoint.Format.BF16, (done, total) -> {});
    try (Kernels kernels = KernelBackend.NATIVE.open(2); var model = DeepseekModel.load(dir, Precision.INT8, kernels, (done, total) -> {})) {
      var triads = new ArrayDeque<>(List.of(41.0, 43.0)); // GB/s, in the order the bench asks
      var r = ThroughputBench.measure(model, 3, 20, 6, 0, 0, null, null, Duration.ZERO, triads::removeFirst);

      assertThat(triads).isEmpty();
      assertThat(r.triadBefore()).isEqualTo(41.0);
      assertThat(r.triadAfter()).isEqualTo(43.0);
      // 6 output tokens: the first comes from the prefill, the other 5 from steps where all 3 requests decode
      assertThat(r.decodeSteps()).isEqualTo(5);
      assertThat(r.decodeTokensPerSecond()).isCloseTo(3 / r.secondsPerDecodeStep(), within(1e-9));
      assertThat(r.tokensPerRequestStep()).isEqualTo(1.0);
      assertThat(r.prefillTokensPerSecond()).isPositive();
      // a step reads every dense weight, the experts its tokens pick and each sequence's KV
      assertThat(r.bytesPerDecodeStep()).isGreaterThan(model.denseWeightBytes());
    }
  }

  @Test
  void withSpeculationTheDecodeFiguresCountTheTokensDelivered() throws Exception {
    Path dir = Files.createTempDirectory("moemesh-bench-test").resolve("tiny");
    DemoCheckpoint.writeShipped("tiny", dir, 7, DemoCheckpoint.Format.BF16, (done, total) -> {});
    try (Kernels kernels = KernelBackend.NATIVE.open(2); var model = DeepseekModel.load(dir, Precision.INT8, kernels, (done, total) -> {})) {
      var r = ThroughputBench.measure(model, 3, 20, 8, 0, 2, null, null, Duration.ZERO, new ArrayDeque<>(List.of(41.0, 43.0))::removeFirst);

      assertThat(r.speculation().numDraftTokens()).as("every decode step verifies drafts").isPositive();
      assertThat(r.tokensPerRequestStep()).isBetween(1.0, 3.0);
      double delivered = r.tokensPerRequestStep() * 3 * r.decodeSteps();
      assertThat(delivered).as("whole tokens, at most the 7 each request decodes after its first").isCloseTo(Math.rint(delivered), within(1e-9))
          .isLessThanOrEqualTo(3 * 7);
      assertThat(r.decodeTokensPerSecond()).isCloseTo(3 * r.tokensPerRequestStep() / r.secondsPerDecodeStep(), within(1e-6));
      assertThat(r.secondsPerOutputToken()).isCloseTo(r.secondsPerDecodeStep() / r.tokensPerRequestStep(), within(1e-12));
    }
  }

  @Test
  void profilesTheFullBatchDecodeStepsAndThePromptStepsApart() throws Exception {
    Path dir = Files.createTempDirectory("moemesh-bench-test").resolve("tiny");
    DemoCheckpoint.writeShipped("tiny", dir, 7, DemoCheckpoint.Format.BF16, (done, total) -> {});
    try (Kernels kernels = KernelBackend.NATIVE.open(2); var model = DeepseekModel.load(dir, Precision.INT8, kernels, (done, total) -> {})) {
      var profiles = new StepProfiles(new ProfilingKernels(kernels));
      var triads = new ArrayDeque<>(List.of(41.0, 43.0));
      var r = ThroughputBench.measure(model.withKernels(profiles.profiler), 3, 20, 6, 0, 0, profiles, null, Duration.ZERO, triads::removeFirst);

      assertThat(profiles.decode.steps()).isEqualTo(r.decodeSteps());
      assertThat(profiles.decode.seconds()).isCloseTo(r.decodeSecondsTotal(), within(1e-9));
      assertThat(profiles.decode.tokensPerStep()).isEqualTo(3); // one token for each of the 3 requests
      assertThat(profiles.prompt.tokensPerStep()).isEqualTo(60); // 3 prompts of 20 tokens fit one step
      assertThat(ops(profiles.decode)).contains("mlaDecode").doesNotContain("attention");
      assertThat(ops(profiles.prompt)).contains("attention");
      long attentionCalls = profiles.prompt.ops().stream().filter(o -> o.op().equals("attention")).mapToLong(OpTime::calls).sum();
      assertThat(attentionCalls).as("one call per sequence and layer").isEqualTo(3L * model.config().numHiddenLayers());
    }
  }

  private static List<String> ops(StepProfiles.Kind kind) {
    return kind.ops().stream().map(OpTime::op).toList();
  }
}
