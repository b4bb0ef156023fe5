package io.moemesh.engine;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.kernels.KernelBackend;
import io.moemesh.model.Precision;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The record's own checks; reading it from configuration is engine-host's {@code EngineConfigTest}. */
class EngineSettingsTest {
  private static EngineSettings with(int threads, long kvCacheBytes, int pageSize, int microBatchThreshold, int speculativeTokens) {
    return new EngineSettings(Path.of("/m"), Precision.INT8, KernelBackend.NATIVE, threads, kvCacheBytes, pageSize, true,
        SchedulerConfig.defaults(), microBatchThreshold, speculativeTokens);
  }

  @Test
  void refusesValuesTheEngineCannotRunWith() {
    assertThatThrownBy(() -> with(0, 1 << 20, 16, 0, 0)).hasMessage("threads must be ≥ 1, got 0");
    assertThatThrownBy(() -> with(1, 0, 16, 0, 0)).hasMessage("the KV cache needs memory, got 0 bytes");
    assertThatThrownBy(() -> with(1, 1 << 20, 0, 0, 0)).hasMessage("a KV page holds at least one token, got 0");
    assertThatThrownBy(() -> with(1, 1 << 20, 16, -1, 0)).hasMessageContaining("micro-batch threshold must be ≥ 0");
    assertThatThrownBy(() -> with(1, 1 << 20, 16, 0, -2)).hasMessageContaining("speculative tokens must be ≥ 0");
  }
}
