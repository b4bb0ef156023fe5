package io.moemesh.engine;

import io.moemesh.kernels.KernelBackend;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.Precision;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Everything needed to bring up one engine: which model, how to compute it, how much KV it may hold and how
 * it schedules. The services fill it from their configuration (engine-host's {@code EngineConfig},
 * {@code moemesh.engine.*}); the CLI from its flags.
 *
 * @param kvCacheBytes memory for latent-KV pages (all layers); the page count follows from the model
 * @param microBatchThreshold tokens per step at or above which a step runs as two overlapped micro-batches
 *     (see {@link DeepseekRunner}); 0 = never
 * @param speculativeTokens draft tokens per request and step from the model's MTP module (speculative decoding);
 *     0 = off
 * @param draftVocabulary the MTP head drafts over the first this many token ids ({@link DeepseekModel#draftVocabulary(int)});
 *     0 = the whole vocabulary
 */
public record EngineSettings(Path modelDir, Precision precision, KernelBackend kernels, int threads, long kvCacheBytes,
    int pageSize, boolean prefixCaching, SchedulerConfig scheduler, int microBatchThreshold, int speculativeTokens, int draftVocabulary) {

  public EngineSettings {
    Objects.requireNonNull(modelDir, "modelDir");
    Objects.requireNonNull(precision, "precision");
    Objects.requireNonNull(kernels, "kernels");
    Objects.requireNonNull(scheduler, "scheduler");
    if (threads < 1) throw new IllegalArgumentException("threads must be ≥ 1, got " + threads);
    if (kvCacheBytes < 1) throw new IllegalArgumentException("the KV cache needs memory, got " + kvCacheBytes + " bytes");
    if (pageSize < 1) throw new IllegalArgumentException("a KV page holds at least one token, got " + pageSize);
    if (microBatchThreshold < 0) throw new IllegalArgumentException("the micro-batch threshold must be ≥ 0 (0 = off), got " + microBatchThreshold);
    if (speculativeTokens < 0) throw new IllegalArgumentException("speculative tokens must be ≥ 0 (0 = off), got " + speculativeTokens);
    if (draftVocabulary < 0) throw new IllegalArgumentException("the draft vocabulary must be ≥ 0 (0 = all of it), got " + draftVocabulary);
  }

  /** Settings whose MTP head, if speculating, drafts over the whole vocabulary. */
  public EngineSettings(Path modelDir, Precision precision, KernelBackend kernels, int threads, long kvCacheBytes, int pageSize,
      boolean prefixCaching, SchedulerConfig scheduler, int microBatchThreshold, int speculativeTokens) {
    this(modelDir, precision, kernels, threads, kvCacheBytes, pageSize, prefixCaching, scheduler, microBatchThreshold, speculativeTokens, 0);
  }

  /** Settings without speculative decoding. */
  public EngineSettings(Path modelDir, Precision precision, KernelBackend kernels, int threads, long kvCacheBytes, int pageSize,
      boolean prefixCaching, SchedulerConfig scheduler, int microBatchThreshold) {
    this(modelDir, precision, kernels, threads, kvCacheBytes, pageSize, prefixCaching, scheduler, microBatchThreshold, 0);
  }

  /** Settings with the default micro-batch threshold ({@link DeepseekRunner#DEFAULT_MICRO_BATCH_THRESHOLD}). */
  public EngineSettings(Path modelDir, Precision precision, KernelBackend kernels, int threads, long kvCacheBytes, int pageSize,
      boolean prefixCaching, SchedulerConfig scheduler) {
    this(modelDir, precision, kernels, threads, kvCacheBytes, pageSize, prefixCaching, scheduler, DeepseekRunner.DEFAULT_MICRO_BATCH_THRESHOLD);
  }
}
