package io.moemesh.engine;

import io.moemesh.model.DeepseekModel;
import io.moemesh.model.moe.ExpertBackend;
import java.util.Objects;
import java.util.Optional;

/**
 * What {@link Engine#create} builds an engine from: a model, how the scheduler fills a step and the KV cache's size,
 * then the optional parts, each with its default ({@link #of}) and a {@code with…} to change it.
 *
 * @param experts who computes the MoE layers' experts: by default the model's own, in this process
 * @param connector where prompt KV is exported to or imported from (prefill or decode role): by default none
 * @param observer who sees every computed logit row (tests, the CLI's dump): by default nobody, which lets a greedy
 *     step take its argmax without copying the rows out
 * @param microBatchThreshold steps of at least this many tokens run as two overlapped micro-batches (0: never, the default)
 * @param speculativeTokens MTP drafts per request and step (0: no speculative decoding, the default)
 */
public record EngineSpec(DeepseekModel model, SchedulerConfig scheduler, KvCacheConfig kvCache, ExpertBackend experts,
    KvConnector connector, Optional<DeepseekRunner.LogitsObserver> observer, int microBatchThreshold, int speculativeTokens) {

  public EngineSpec {
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(scheduler, "scheduler");
    Objects.requireNonNull(kvCache, "kvCache");
    Objects.requireNonNull(experts, "experts");
    Objects.requireNonNull(connector, "connector");
    Objects.requireNonNull(observer, "observer");
    if (microBatchThreshold < 0) throw new IllegalArgumentException("microBatchThreshold must be ≥ 0, got " + microBatchThreshold);
    if (speculativeTokens < 0) throw new IllegalArgumentException("speculativeTokens must be ≥ 0, got " + speculativeTokens);
  }

  /** An engine over {@code model} with its experts in this process, no KV connector, no observer, no micro-batches, no speculation. */
  public static EngineSpec of(DeepseekModel model, SchedulerConfig scheduler, KvCacheConfig kvCache) {
    return new EngineSpec(model, scheduler, kvCache, model.localExperts(), KvConnector.NONE, Optional.empty(),
        DeepseekRunner.DEFAULT_MICRO_BATCH_THRESHOLD, 0);
  }

  public EngineSpec withExperts(ExpertBackend experts) {
    return new EngineSpec(model, scheduler, kvCache, experts, connector, observer, microBatchThreshold, speculativeTokens);
  }

  public EngineSpec withConnector(KvConnector connector) {
    return new EngineSpec(model, scheduler, kvCache, experts, connector, observer, microBatchThreshold, speculativeTokens);
  }

  public EngineSpec withObserver(DeepseekRunner.LogitsObserver observer) {
    return new EngineSpec(model, scheduler, kvCache, experts, connector, Optional.of(observer), microBatchThreshold, speculativeTokens);
  }

  public EngineSpec withMicroBatchThreshold(int tokens) {
    return new EngineSpec(model, scheduler, kvCache, experts, connector, observer, tokens, speculativeTokens);
  }

  public EngineSpec withSpeculativeTokens(int drafts) {
    return new EngineSpec(model, scheduler, kvCache, experts, connector, observer, microBatchThreshold, drafts);
  }
}
