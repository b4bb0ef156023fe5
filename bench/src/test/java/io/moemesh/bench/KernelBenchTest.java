package io.moemesh.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The harness without the kernels: options, statistics and the report formats. */
class KernelBenchTest {

  @Nested
  class Options {
    @Test
    void parsesJsonAndQuick() {
      var o = KernelBench.Options.parse("--quick", "--json", "out/k.json");
      assertThat(o.quick()).isTrue();
      assertThat(o.json()).isEqualTo(Path.of("out/k.json"));
      assertThat(KernelBench.Options.parse("--json=k.json").json()).isEqualTo(Path.of("k.json"));
    }

    @Test
    void onlyNamesKnownCases() {
      assertThat(KernelBench.Options.parse("--only", "gemm_bf16_bf16,gemv_bf16_bf16").only())
          .containsExactlyInAnyOrder("gemm_bf16_bf16", "gemv_bf16_bf16");
      assertThat(KernelBench.Options.parse("--only=gemm_int8").only()).containsExactly("gemm_int8");
      assertThat(KernelBench.Options.parse("--quick").only()).isEmpty();
      assertThatThrownBy(() -> KernelBench.Options.parse("--only", "gemm_bf16")).hasMessageContaining("unknown case 'gemm_bf16'")
          .hasMessageContaining("gemm_bf16_bf16");
      assertThatThrownBy(() -> KernelBench.Options.parse("--only")).hasMessage("Missing required parameter for option '--only' (CASE)");
    }

    @Test
    void rejectsUnknownOptionsAndAMissingFile() {
      assertThatThrownBy(() -> KernelBench.Options.parse("--fast")).hasMessage("Unknown option: '--fast'");
      assertThatThrownBy(() -> KernelBench.Options.parse("--json")).hasMessage("Missing required parameter for option '--json' (FILE)");
    }
  }

  @Nested
  class Statistics {
    @Test
    void medianOfOddAndEvenCounts() {
      assertThat(Timing.median(new double[] {5, 1, 3})).isEqualTo(3);
      assertThat(Timing.median(new double[] {4, 1, 3, 2})).isEqualTo(2.5);
    }

    @Test
    void needsAtLeastFiveRepetitions() {
      assertThatThrownBy(() -> new Timing(4, 0.1, 0.1)).isInstanceOf(IllegalArgumentException.class);
    }
  }

  @Nested
  class Formats {
    private final List<Measurement> results = List.of(
        new Measurement("triad", "3 x 256 MiB F32", 1, 25.5, "GB/s", null, null, "best of 20"),
        new Measurement("gemv_int8", "n=1 \"m\"", 1, 20.0, "GB/s", 20.0 / 25.5, "triad", "median of 11"));

    @Test
    void jsonHasOneObjectPerMeasurementWithTheAgreedFields() {
      String json = Report.json(results);
      assertThat(json).startsWith("[").endsWith("]\n");
      assertThat(json.lines().filter(l -> l.contains("\"name\""))).hasSize(2);
      assertThat(json).contains("\"name\": \"triad\", \"threads\": 1, \"value\": 25.500, \"unit\": \"GB/s\", \"ratio\": null, \"ratio_to\": null")
          .contains("\"ratio\": 0.7843, \"ratio_to\": \"triad\"")
          .contains("n=1 \\\"m\\\"");
    }

    @Test
    void tableMarksTargets() {
      assertThat(Report.table(results)).contains(">= 0.85 LOW").contains("triad");
    }
  }
}
