package io.moemesh.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Set;
import org.junit.jupiter.api.Test;

class BenchOptionsTest {
  static final Set<String> VALUES = Set.of("--batch", "--json");
  static final Set<String> FLAGS = Set.of("--profile");

  @Test
  void readsValuesBothWaysFlagsAndDefaults() {
    var o = BenchOptions.parse(new String[] {"--batch", "1,32", "--json=out.json", "--profile"}, VALUES, FLAGS);
    assertThat(o.value("--batch", "8")).isEqualTo("1,32");
    assertThat(o.value("--json", null)).isEqualTo("out.json");
    assertThat(o.flag("--profile")).isTrue();
    assertThat(o.help()).isFalse();
    var defaults = BenchOptions.parse(new String[0], VALUES, FLAGS);
    assertThat(defaults.value("--batch", "8")).isEqualTo("8");
    assertThat(defaults.flag("--profile")).isFalse();
  }

  @Test
  void helpAsksForTheUsageInsteadOfARun() {
    assertThat(BenchOptions.parse(new String[] {"--batch", "1", "--help"}, VALUES, FLAGS).help()).isTrue();
    assertThat(BenchOptions.parse(new String[] {"-h"}, VALUES, FLAGS).help()).isTrue();
  }

  @Test
  void rejectsUnknownOptionsNamingTheKnownOnes() {
    assertThatThrownBy(() -> BenchOptions.parse(new String[] {"--batches", "1"}, VALUES, FLAGS))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("unknown option '--batches' (options: --batch, --json, --profile)");
  }

  @Test
  void rejectsAMissingValueAndAnOptionGivenTwice() {
    assertThatThrownBy(() -> BenchOptions.parse(new String[] {"--batch"}, VALUES, FLAGS))
        .hasMessage("--batch needs a value");
    assertThatThrownBy(() -> BenchOptions.parse(new String[] {"--batch", "1", "--batch=2"}, VALUES, FLAGS))
        .hasMessage("--batch is given twice");
  }

  @Test
  void numbersAreCheckedWithTheOptionsName() {
    assertThat(BenchOptions.positive("--batch", " 32")).isEqualTo(32);
    assertThatThrownBy(() -> BenchOptions.positive("--batch", "0")).hasMessage("--batch must be at least 1, got 0");
    assertThatThrownBy(() -> BenchOptions.nonNegative("--m", "-1")).hasMessage("--m must be at least 0, got -1");
    assertThatThrownBy(() -> BenchOptions.positive("--batch", "x")).hasMessage("--batch must be an integer, got 'x'");
  }

  @Test
  void theThroughputAndModelBenchesReadTheirOptionsIntoSettings() {
    var t = ThroughputBench.Settings.of(BenchOptions.parse(
        new String[] {"--batch", "1,32", "--output-len", "16", "--threads", "1", "--profile"}, ThroughputBench.VALUES,
        ThroughputBench.FLAGS));
    assertThat(t.batches()).containsExactly(1, 32);
    assertThat(t.outputLen()).isEqualTo(16);
    assertThat(t.inputLen()).isEqualTo(512);
    assertThat(t.profile()).isTrue();
    assertThatThrownBy(() -> ThroughputBench.Settings.of(BenchOptions.parse(new String[] {"--output-len", "1"},
        ThroughputBench.VALUES, ThroughputBench.FLAGS))).hasMessageContaining("--output-len must be at least 2");
    var m = ModelBench.Settings.of(BenchOptions.parse(new String[] {"--decode-tokens", "8"}, ModelBench.VALUES,
        ModelBench.FLAGS));
    assertThat(m.decodeSteps()).isEqualTo(8);
    assertThat(m.promptLength()).isEqualTo(512);
  }

  @Test
  void eachBenchsUsageNamesEveryOptionItTakes() {
    for (String option : ThroughputBench.VALUES) assertThat(ThroughputBench.USAGE).contains(option);
    for (String option : ThroughputBench.FLAGS) assertThat(ThroughputBench.USAGE).contains(option);
    for (String option : ModelBench.VALUES) assertThat(ModelBench.USAGE).contains(option);
    for (String option : ModelBench.FLAGS) assertThat(ModelBench.USAGE).contains(option);
  }
}
