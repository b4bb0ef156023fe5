package io.moemesh.enginehost;

import io.moemesh.engine.DeepseekRunner;
import io.moemesh.engine.EngineSettings;
import io.moemesh.engine.SchedulerConfig;
import io.moemesh.enginehost.ConfigConverters.NonNegative;
import io.moemesh.enginehost.ConfigConverters.Positive;
import io.moemesh.enginehost.ConfigConverters.StrictBoolean;
import io.moemesh.kernels.KernelBackend;
import io.moemesh.model.Precision;
import io.quarkus.runtime.configuration.MemorySize;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithConverter;
import io.smallrye.config.WithDefault;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The engine's settings ({@code moemesh.engine.*}, listed in docs/configuration.md), as both engine services read
 * them; {@link #settings()} builds the framework-free {@link EngineSettings} the engine runs on. A bad value fails
 * the service's startup with a message naming its key.
 */
@ConfigMapping(prefix = "moemesh.engine")
public interface EngineConfig {
  /** The checkpoint directory: {@code config.json}, safetensors, tokenizer. */
  Path modelDir();

  @WithDefault("int8")
  Precision precision();

  @WithDefault("native")
  KernelBackend kernels();

  /** Kernel threads; all cores when unset. */
  Optional<@WithConverter(Positive.class) Integer> threads();

  /** Memory for latent-KV pages (all layers); the page count follows from the model. */
  @WithDefault("512M")
  MemorySize kvCacheMemory();

  /** Tokens per KV page. */
  @WithDefault("16")
  @WithConverter(Positive.class)
  int pageSize();

  @WithDefault("true")
  @WithConverter(StrictBoolean.class)
  boolean prefixCaching();

  /** Tokens per step. */
  @WithDefault("2048")
  @WithConverter(Positive.class)
  int maxBatchedTokens();

  @WithDefault("64")
  @WithConverter(Positive.class)
  int maxRunningRequests();

  @WithDefault("fcfs")
  SchedulerConfig.Policy policy();

  @WithDefault("true")
  @WithConverter(StrictBoolean.class)
  boolean lengthBuckets();

  /** Tokens per step from which a step runs as two overlapped micro-batches; 0 = never. */
  @WithDefault("" + DeepseekRunner.DEFAULT_MICRO_BATCH_THRESHOLD)
  @WithConverter(NonNegative.class)
  int microBatchThreshold();

  /** Draft tokens per request and step from the model's MTP module; 0 = off. */
  @WithDefault("0")
  @WithConverter(NonNegative.class)
  int speculativeTokens();

  /**
   * The MTP head drafts over the first this many token ids only (FR-Spec: byte-level BPE numbers tokens in merge order,
   * so these are the most frequent), reading that share of its weights; 0 = the whole vocabulary.
   */
  @WithDefault("0")
  @WithConverter(NonNegative.class)
  int speculativeDraftVocabulary();

  /** The engine's settings. */
  default EngineSettings settings() {
    if (kvCacheMemory().asLongValue() < 1)
      throw new IllegalArgumentException("moemesh.engine.kv-cache-memory: the KV cache needs memory, got " + kvCacheMemory().asLongValue() + " bytes");
    return new EngineSettings(modelDir(), precision(), kernels(), threads().orElse(Runtime.getRuntime().availableProcessors()),
        kvCacheMemory().asLongValue(), pageSize(), prefixCaching(),
        new SchedulerConfig(maxBatchedTokens(), maxRunningRequests(), policy(), lengthBuckets()), microBatchThreshold(),
        speculativeTokens(), speculativeDraftVocabulary());
  }
}
