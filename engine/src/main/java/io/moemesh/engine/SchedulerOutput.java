package io.moemesh.engine;

import java.util.List;

/**
 * One step's plan: which requests run how many tokens. The runner executes it; the scheduler's
 * {@code update} applies the result.
 *
 * @param chunks the requests of this step, each once
 * @param preempted requests sent back to the queue this step (their pages were freed)
 */
public record SchedulerOutput(List<ScheduledChunk> chunks, List<String> preempted) {

  public SchedulerOutput {
    chunks = List.copyOf(chunks);
    preempted = List.copyOf(preempted);
  }

  public int numScheduledTokens() {
    return chunks.stream().mapToInt(ScheduledChunk::numTokens).sum();
  }

  public boolean isEmpty() {
    return chunks.isEmpty();
  }
}
