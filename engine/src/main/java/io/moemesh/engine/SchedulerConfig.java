package io.moemesh.engine;

/**
 * How the scheduler fills a step.
 *
 * @param maxBatchedTokens tokens per step across all requests (decode tokens first, then prompt chunks)
 * @param maxRunningRequests requests holding KV and taking part in steps at once
 * @param policy the order requests are admitted in, and preempted in reverse
 * @param lengthBuckets after the first prompt admitted in a step, prefer waiting prompts of the same length
 *     bucket (a power of two), as the Ascend deployment batches prefill by length
 */
public record SchedulerConfig(int maxBatchedTokens, int maxRunningRequests, Policy policy, boolean lengthBuckets) {

  public enum Policy {
    /** First come, first served. */
    FCFS,
    /** Smallest {@link GenerationRequest#priority()} first, then first come. */
    PRIORITY
  }

  public SchedulerConfig {
    if (maxBatchedTokens < 1) throw new IllegalArgumentException("maxBatchedTokens must be ≥ 1, got " + maxBatchedTokens);
    if (maxRunningRequests < 1) throw new IllegalArgumentException("maxRunningRequests must be ≥ 1, got " + maxRunningRequests);
    java.util.Objects.requireNonNull(policy, "policy");
  }

  public static SchedulerConfig defaults() {
    return new SchedulerConfig(2048, 64, Policy.FCFS, true);
  }

  public SchedulerConfig withMaxBatchedTokens(int n) {
    return new SchedulerConfig(n, maxRunningRequests, policy, lengthBuckets);
  }

  public SchedulerConfig withMaxRunningRequests(int n) {
    return new SchedulerConfig(maxBatchedTokens, n, policy, lengthBuckets);
  }

  public SchedulerConfig withPolicy(Policy p) {
    return new SchedulerConfig(maxBatchedTokens, maxRunningRequests, p, lengthBuckets);
  }

  public SchedulerConfig withLengthBuckets(boolean on) {
    return new SchedulerConfig(maxBatchedTokens, maxRunningRequests, policy, on);
  }
}
