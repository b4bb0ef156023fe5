package io.moemesh.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.cli.Cli;
import io.moemesh.model.Precision;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code bin/moemesh bench ...} as its command line reads it: options into settings, the generated usage, usage errors. */
class BenchCommandTest {
  /** What one run of {@code bench ARGS} printed and returned. */
  record Run(int exitCode, String out, String err) {}

  static Run bench(String... args) {
    var out = new StringWriter();
    var err = new StringWriter();
    CommandLine commandLine = Cli.commandLine(new BenchCommand()).setOut(new PrintWriter(out)).setErr(new PrintWriter(err));
    int code = commandLine.execute(args);
    return new Run(code, out.toString(), err.toString());
  }

  @Test
  void readsValuesBothWaysFlagsAndDefaults() {
    var t = ThroughputBench.Settings.parse("--batch", "1,32", "--json=out.json", "--profile");
    assertThat(t.batches()).containsExactly(1, 32);
    assertThat(t.json()).isEqualTo(Path.of("out.json"));
    assertThat(t.profile()).isTrue();
    var defaults = ThroughputBench.Settings.parse();
    assertThat(defaults.batches()).containsExactly(1, 8, 32, 64);
    assertThat(defaults.json()).isNull();
    assertThat(defaults.profile()).isFalse();
    assertThat(defaults.precision()).isEqualTo(Precision.INT8);
    assertThat(ThroughputBench.Settings.parse("--precision", "bf16").precision()).isEqualTo(Precision.BF16);
  }

  @Test
  void theThroughputModelAndQualityBenchesReadTheirOptionsIntoSettings() {
    var t = ThroughputBench.Settings.parse("--batch", "1,32", "--output-len", "16", "--threads", "1", "--profile");
    assertThat(t.batches()).containsExactly(1, 32);
    assertThat(t.outputLen()).isEqualTo(16);
    assertThat(t.inputLen()).isEqualTo(512);
    assertThat(t.threads()).isEqualTo(1);
    assertThat(t.profile()).isTrue();
    assertThatThrownBy(() -> ThroughputBench.Settings.parse("--output-len", "1")).hasMessageContaining("--output-len must be at least 2");
    var m = ModelBench.Settings.parse("--decode-tokens", "8");
    assertThat(m.decodeSteps()).isEqualTo(8);
    assertThat(m.promptLength()).isEqualTo(512);
    assertThat(ThroughputBench.Settings.parse("--batch", "1, 32").batches()).containsExactly(1, 32); // spaces after commas
    var q = QualityBench.Settings.parse("--precision", "int8, EXACT,int8");
    assertThat(q.precisions()).containsExactly(Precision.INT8, Precision.EXACT);
    assertThat(QualityBench.Settings.parse().precisions()).containsExactly(Precision.EXACT, Precision.BF16, Precision.INT8);
    assertThatThrownBy(() -> QualityBench.Settings.parse("--window", "2")).hasMessage("--window must be at least 3 tokens, got 2");
  }

  @Test
  void helpPrintsTheGeneratedUsageOfEveryBenchAndRunsNothing() {
    Run root = bench("--help");
    assertThat(root.exitCode()).isZero();
    assertThat(root.out()).startsWith("Usage: moemesh bench").contains("kernels", "model", "throughput", "serve", "profile", "quality");
    Run throughput = bench("throughput", "--batch", "1", "--help");
    assertThat(throughput.exitCode()).isZero();
    assertThat(throughput.out()).startsWith("Usage: moemesh bench throughput").contains("--batch=B", "--micro-batch-threshold=M",
        "--speculative-tokens=K", "--profile", "--json=FILE", "(default: 1,8,32,64)");
    assertThat(throughput.err()).isEmpty();
    for (String target : List.of("kernels", "model", "serve", "profile", "quality")) {
      Run help = bench(target, "-h");
      assertThat(help.exitCode()).as(target).isZero();
      assertThat(help.out()).as(target).startsWith("Usage: moemesh bench " + target).contains("-h, --help");
    }
    assertThat(bench("help", "serve").out()).startsWith("Usage: moemesh bench serve").contains("--request-rate=R", "--goodput=NAME:MS");
    assertThat(bench("kernels", "--help").out()).contains("gemm_bf16_bf16"); // the case names
  }

  @Test
  void aBadOptionValueIsAUsageErrorNamingTheOptionAndTheValue() {
    Run precision = bench("model", "--precision", "fp4");
    assertThat(precision.exitCode()).isEqualTo(2);
    assertThat(precision.err()).startsWith("moemesh bench model: Invalid value for option '--precision': expected one of")
        .contains("but was 'fp4'").contains("Usage: moemesh bench model");
    assertThat(precision.out()).isEmpty();
    Run batch = bench("throughput", "--batch", "1,0");
    assertThat(batch.exitCode()).isEqualTo(2);
    assertThat(batch.err()).startsWith("moemesh bench throughput: --batch must be at least 1, got 0");
    Run notANumber = bench("throughput", "--input-len", "x");
    assertThat(notANumber.exitCode()).isEqualTo(2);
    assertThat(notANumber.err()).startsWith("moemesh bench throughput: Invalid value for option '--input-len': 'x' is not an int");
  }

  @Test
  void rejectsUnknownOptionsAndTargetsAMissingValueAndAnOptionGivenTwice() {
    Run unknown = bench("throughput", "--batches", "1");
    assertThat(unknown.exitCode()).isEqualTo(2);
    assertThat(unknown.err()).startsWith("moemesh bench throughput: Unknown options: '--batches', '1'")
        .contains("Possible solutions: --batch");
    Run target = bench("kernel");
    assertThat(target.exitCode()).isEqualTo(2);
    assertThat(target.err()).startsWith("moemesh bench: Unmatched argument at index 0: 'kernel'").contains("kernels");
    Run none = bench();
    assertThat(none.exitCode()).isEqualTo(2);
    assertThat(none.err()).startsWith("moemesh bench: bench needs a target: kernels, model, throughput, serve, profile or quality");
    assertThatThrownBy(() -> ThroughputBench.Settings.parse("--batch")).hasMessage("Missing required parameter for option '--batch' (B)");
    assertThatThrownBy(() -> ThroughputBench.Settings.parse("--input-len", "1", "--input-len=2"))
        .hasMessage("option '--input-len' (I) should be specified only once");
    assertThat(ThroughputBench.Settings.parse("--batch", "1", "--batch=2,4").batches()).containsExactly(1, 2, 4); // a list adds up
  }
}
