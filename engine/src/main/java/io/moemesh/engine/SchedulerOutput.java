package io.moemesh.engine;

import java.util.List;

/**
 * One step's plan: which requests run how many tokens. The runner executes it; the scheduler's
 * {@code update} applies the result.
 *
 * @param chunks the requests of this step, each once
 * @param preempted requests sent back to the queue this step (their pages were freed)
 * @param loads requests whose pages are reserved and whose KV should now be fetched: the prompt (decode role) or a
 *     stored prefix (prefill role)
 */
public record SchedulerOutput(List<ScheduledChunk> chunks, List<String> preempted, List<KvLoad> loads) {

  /**
   * Fetch the first {@code numTokens} positions of a request's KV into its pages {@code blockTable}: the main model's
   * layers, and the MTP layer's when {@code withMtpLayer} (a prompt a speculating prefill exported, for a request that
   * speculates here).
   */
  public record KvLoad(String requestId, int numTokens, int[] blockTable, boolean withMtpLayer) {}

  public SchedulerOutput {
    chunks = List.copyOf(chunks);
    preempted = List.copyOf(preempted);
    loads = List.copyOf(loads);
  }

  public SchedulerOutput(List<ScheduledChunk> chunks, List<String> preempted) {
    this(chunks, preempted, List.of());
  }

  public int numScheduledTokens() {
    return chunks.stream().mapToInt(ScheduledChunk::numTokens).sum();
  }

  public boolean isEmpty() {
    return chunks.isEmpty();
  }
}
