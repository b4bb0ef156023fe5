package io.moemesh.engine;

import io.moemesh.engine.kv.KvCacheUsage;

/**
 * A snapshot for metrics and load reports (the gateway routes on these; autoscalers read them).
 *
 * @param numLoadingKv requests whose prompt KV is arriving from a store (decode role)
 * @param queuedPromptTokens prompt tokens waiting to be computed
 * @param promptTokens prompt tokens computed so far (prefix hits excluded)
 * @param generatedTokens tokens sampled so far (accepted drafts included)
 * @param preemptions requests sent back to the queue for lack of KV pages so far
 * @param speculation speculative decoding's counters (all zero when it is off)
 */
public record EngineStats(int numWaiting, int numRunning, int numLoadingKv, long queuedPromptTokens, KvCacheUsage kvCache, long steps,
    long promptTokens, long generatedTokens, long preemptions, SpecDecodeStats speculation) {

  public EngineStats(int numWaiting, int numRunning, int numLoadingKv, long queuedPromptTokens, KvCacheUsage kvCache, long steps,
      long promptTokens, long generatedTokens, long preemptions) {
    this(numWaiting, numRunning, numLoadingKv, queuedPromptTokens, kvCache, steps, promptTokens, generatedTokens, preemptions,
        SpecDecodeStats.NONE);
  }
}
