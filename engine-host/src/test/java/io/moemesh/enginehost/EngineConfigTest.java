package io.moemesh.enginehost;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.engine.EngineSettings;
import io.moemesh.engine.SchedulerConfig;
import io.moemesh.enginehost.experts.ExpertsSettings;
import io.moemesh.kernels.KernelBackend;
import io.moemesh.model.Precision;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@link EngineConfig} and {@link ExpertsConfig} read by SmallRye from properties, and the records they build. */
class EngineConfigTest {
  private static EngineSettings engine(String... keyValues) {
    Map<String, String> properties = new HashMap<>(Map.of("moemesh.engine.model-dir", "/m"));
    for (int i = 0; i < keyValues.length; i += 2) properties.put("moemesh.engine." + keyValues[i], keyValues[i + 1]);
    return ConfigMappings.engine(properties);
  }

  private static ExpertsSettings experts(String... keyValues) {
    Map<String, String> properties = new HashMap<>();
    for (int i = 0; i < keyValues.length; i += 2) properties.put("moemesh.experts." + keyValues[i], keyValues[i + 1]);
    return ConfigMappings.read(ExpertsConfig.class, properties).settings();
  }

  @Test
  void engineDefaultsNeedOnlyTheModel() {
    var s = engine();
    assertThat(s.modelDir()).isEqualTo(Path.of("/m"));
    assertThat(s.precision()).isEqualTo(Precision.INT8);
    assertThat(s.kernels()).isEqualTo(KernelBackend.NATIVE);
    assertThat(s.threads()).isEqualTo(Runtime.getRuntime().availableProcessors());
    assertThat(s.kvCacheBytes()).isEqualTo(512L << 20);
    assertThat(s.pageSize()).isEqualTo(16);
    assertThat(s.prefixCaching()).isTrue();
    assertThat(s.scheduler()).isEqualTo(SchedulerConfig.defaults());
    assertThat(s.microBatchThreshold()).as("off").isZero();
    assertThat(s.speculativeTokens()).as("off").isZero();
    assertThat(s.draftVocabulary()).as("the whole vocabulary").isZero();
  }

  @Test
  void readsEveryEngineKey() {
    var s = engine("precision", "bf16", "kernels", "reference", "threads", "3", "kv-cache-memory", "2G", "page-size", "32",
        "prefix-caching", "false", "max-batched-tokens", "512", "max-running-requests", "8", "policy", "priority",
        "length-buckets", "false", "micro-batch-threshold", "64", "speculative-tokens", "2",
        "speculative-draft-vocabulary", "32768");
    assertThat(s).isEqualTo(new EngineSettings(Path.of("/m"), Precision.BF16, KernelBackend.REFERENCE, 3, 2L << 30, 32, false,
        new SchedulerConfig(512, 8, SchedulerConfig.Policy.PRIORITY, false), 64, 2, 32768));
    assertThat(engine("kv-cache-memory", "64k").kvCacheBytes()).isEqualTo(64L << 10);
  }

  @Test
  void aBadEngineValueIsNamedByItsKey() {
    assertThatThrownBy(() -> ConfigMappings.engine(Map.of())).hasMessageContaining("moemesh.engine.model-dir");
    assertThatThrownBy(() -> engine("kv-cache-memory", "lots")).hasMessageContaining("moemesh.engine.kv-cache-memory")
        .hasMessageContaining("lots");
    assertThatThrownBy(() -> engine("kv-cache-memory", "0")).hasMessageContaining("moemesh.engine.kv-cache-memory");
    assertThatThrownBy(() -> engine("prefix-caching", "ture")).hasMessageContaining("moemesh.engine.prefix-caching")
        .hasMessageContaining("expected true or false");
    assertThatThrownBy(() -> engine("precision", "fp4")).hasMessageContaining("moemesh.engine.precision");
    assertThatThrownBy(() -> engine("policy", "lifo")).hasMessageContaining("moemesh.engine.policy");
    assertThatThrownBy(() -> engine("max-batched-tokens", "0")).hasMessageContaining("moemesh.engine.max-batched-tokens")
        .hasMessageContaining("must be ≥ 1");
    assertThatThrownBy(() -> engine("threads", "0")).hasMessageContaining("moemesh.engine.threads");
    assertThatThrownBy(() -> engine("micro-batch-threshold", "-1")).hasMessageContaining("moemesh.engine.micro-batch-threshold")
        .hasMessageContaining("must be ≥ 0");
    assertThatThrownBy(() -> engine("speculative-tokens", "-2")).hasMessageContaining("moemesh.engine.speculative-tokens");
    assertThatThrownBy(() -> engine("speculative-draft-vocabulary", "-1")).hasMessageContaining("moemesh.engine.speculative-draft-vocabulary");
  }

  @Test
  void expertsDefaultToLocal() {
    assertThat(experts()).isEqualTo(new ExpertsSettings(false, List.of(), 0, false, Optional.empty(), Duration.ofSeconds(30),
        Duration.ofSeconds(10)));
    assertThat(ConfigMappings.read(ExpertsConfig.class, Map.of()).placementPoll()).isEqualTo(Duration.ofSeconds(1));
  }

  @Test
  void durationsTakeUnitsOrIso8601() {
    var s = experts("routed", "remote", "shards", "a:1, b:2", "shared", "remote", "shared-address", "c:3", "redundant-slots", "4",
        "timeout", "500ms", "step-deadline", "PT2S");
    assertThat(s).isEqualTo(new ExpertsSettings(true, List.of("a:1", "b:2"), 4, true, Optional.of("c:3"), Duration.ofMillis(500),
        Duration.ofSeconds(2)));
    assertThat(experts("timeout", "2s").timeout()).isEqualTo(Duration.ofSeconds(2));
    assertThat(ConfigMappings.read(ExpertsConfig.class, Map.of("moemesh.experts.placement-poll", "250ms")).placementPoll())
        .isEqualTo(Duration.ofMillis(250));
  }

  @Test
  void aBadExpertsValueIsNamedByItsKey() {
    assertThatThrownBy(() -> experts("timeout", "soon")).hasMessageContaining("moemesh.experts.timeout");
    assertThatThrownBy(() -> experts("timeout", "0s")).hasMessageContaining("moemesh.experts.timeout must be positive");
    assertThatThrownBy(() -> experts("routed", "elsewhere")).hasMessageContaining("moemesh.experts.routed");
    assertThatThrownBy(() -> experts("redundant-slots", "-1")).hasMessageContaining("moemesh.experts.redundant-slots");
    assertThatThrownBy(() -> experts("step-deadline", "0s")).hasMessageContaining("moemesh.experts.step-deadline must be positive");
    assertThatThrownBy(() -> experts("routed", "remote")).hasMessageContaining("moemesh.experts.shards");
    assertThatThrownBy(() -> experts("routed", "remote", "shards", "a:1", "shared", "remote"))
        .hasMessageContaining("moemesh.experts.shared-address");
  }
}
