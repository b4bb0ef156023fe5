package io.moemesh.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.kernels.KernelBackend;
import io.moemesh.model.Precision;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class EngineSettingsTest {
  static EngineSettings read(Map<String, String> config) {
    return EngineSettings.fromConfig("e", key -> Optional.ofNullable(config.get(key)));
  }

  @Test
  void defaultsNeedOnlyTheModel() {
    var s = read(Map.of("e.model-dir", "/m"));
    assertThat(s.modelDir()).isEqualTo(Path.of("/m"));
    assertThat(s.precision()).isEqualTo(Precision.INT8);
    assertThat(s.kernels()).isEqualTo(KernelBackend.NATIVE);
    assertThat(s.kvCacheBytes()).isEqualTo(512L << 20);
    assertThat(s.scheduler()).isEqualTo(SchedulerConfig.defaults());
    assertThat(s.microBatchThreshold()).as("off").isZero();
    assertThat(s.speculativeTokens()).as("off").isZero();
  }

  @Test
  void readsEveryKey() {
    var config = new java.util.HashMap<>(Map.of("e.model-dir", "/m", "e.precision", "bf16", "e.threads", "3", "e.kv-cache-memory", "2G",
        "e.page-size", "32", "e.prefix-caching", "false", "e.max-batched-tokens", "512", "e.max-running-requests", "8",
        "e.policy", "priority", "e.length-buckets", "false"));
    config.put("e.micro-batch-threshold", "64");
    config.put("e.speculative-tokens", "2");
    var s = read(config);
    assertThat(s).isEqualTo(new EngineSettings(Path.of("/m"), Precision.BF16, KernelBackend.NATIVE, 3, 2L << 30, 32, false,
        new SchedulerConfig(512, 8, SchedulerConfig.Policy.PRIORITY, false), 64, 2));
  }

  @Test
  void namesTheKeyOfABadValue() {
    assertThatThrownBy(() -> read(Map.of())).hasMessage("e.model-dir is not set: give a checkpoint directory");
    assertThatThrownBy(() -> read(Map.of("e.model-dir", "/m", "e.kv-cache-memory", "lots")))
        .hasMessageStartingWith("e.kv-cache-memory: cannot use 'lots'");
    assertThatThrownBy(() -> read(Map.of("e.model-dir", "/m", "e.prefix-caching", "yes")))
        .hasMessage("e.prefix-caching: cannot use 'yes' (expected true or false)");
    assertThatThrownBy(() -> read(Map.of("e.model-dir", "/m", "e.max-batched-tokens", "0")))
        .hasMessageContaining("maxBatchedTokens must be ≥ 1");
    assertThatThrownBy(() -> read(Map.of("e.model-dir", "/m", "e.micro-batch-threshold", "-1")))
        .hasMessage("e.micro-batch-threshold: cannot use '-1' (must be ≥ 0 (0 = off))");
    assertThatThrownBy(() -> read(Map.of("e.model-dir", "/m", "e.speculative-tokens", "-2")))
        .hasMessage("e.speculative-tokens: cannot use '-2' (must be ≥ 0 (0 = off))");
  }
}
