package io.moemesh.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.moemesh.kernels.ProfilingKernels.OpTime;
import io.moemesh.kernels.ProfilingKernels.Work;
import java.util.List;
import org.junit.jupiter.api.Test;

/** An op's speed of light is the longer of its bytes at the bandwidth and its multiply-adds at the peaks. */
class SpeedOfLightTest {
  // 50 GB/s, 1000 INT8 GOP/s, 500 BF16 GOP/s
  final SpeedOfLight light = new SpeedOfLight(50, 1000, 500);

  @Test
  void aGemvIsBoundByItsBytes() {
    Work gemv = new Work(100_000_000, 50_000_000, 0, 0); // 100 MB, one multiply-add a byte
    assertThat(light.seconds(gemv)).isCloseTo(2e-3, within(1e-12)); // 100 MB at 50 GB/s; the arithmetic takes 0.1 ms
    assertThat(light.limit(gemv)).isEqualTo("memory");
  }

  @Test
  void aBatchedBf16MatmulIsBoundByItsArithmetic() {
    Work head = new Work(265_000_000, 0, 4_236_000_000L, 0); // batch 32 through a 129280 x 1024 head
    assertThat(light.seconds(head)).isCloseTo(2 * 4.236e9 / 500e9, within(1e-12)); // 16.9 ms against 5.3 of bytes
    assertThat(light.limit(head)).isEqualTo("bf16");
  }

  @Test
  void arithmeticOfBothKindsAddsUp() {
    Work mixed = new Work(0, 1_000_000_000, 500_000_000, 0);
    assertThat(light.seconds(mixed)).isCloseTo(2e-3 + 2e-3, within(1e-12));
    assertThat(light.limit(mixed)).isEqualTo("int8+bf16");
  }

  @Test
  void f32MultiplyAddsCountAsTheirBytesAlone() {
    assertThat(light.seconds(new Work(50_000, 0, 0, 1_000_000_000))).isCloseTo(1e-6, within(1e-15));
  }

  @Test
  void rejectsAMachineWithoutBandwidthOrPeaks() {
    assertThatThrownBy(() -> new SpeedOfLight(0, 1000, 500)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must be positive");
    assertThatThrownBy(() -> new SpeedOfLight(50, 1000, Double.NaN)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theProfileSetsEachOpAndTheStepAgainstItsBound() {
    var ops = List.of(new OpTime("matmulInt8 i8 512×1024", 20, 40_000_000, new Work(200_000_000, 0, 0, 0)),
        new OpTime("matmul bf16 129280×1024 · bf16 x", 2, 30_000_000, new Work(0, 0, 5_000_000_000L, 0)));
    String profile = Report.profile(ops, 2, 0.1, light); // 2 steps of 50 ms
    // experts: 20 ms a step against 2 ms of bytes; head: 15 ms against 10 ms of BF16 arithmetic; the step: 50 ms against 12
    assertThat(profile).containsPattern("matmulInt8 i8 512×1024\\s+10\\.0\\s+20\\.000\\s+40\\.0%\\s+2\\.000\\s+10%\\s+memory");
    assertThat(profile).containsPattern("matmul bf16 129280×1024 · bf16 x\\s+1\\.0\\s+15\\.000\\s+30\\.0%\\s+10\\.000\\s+67%\\s+bf16");
    assertThat(profile).containsPattern("\\(outside kernel calls\\)\\s+15\\.000\\s+30\\.0%");
    assertThat(profile).containsPattern("step\\s+50\\.000\\s+12\\.000\\s+24%");
    assertThat(profile).contains("bounds at 50.0 GB/s (triad), 1000 INT8 GOP/s and 500 BF16 GOP/s");
  }
}
