package io.moemesh.engine;

import io.moemesh.model.sampling.Sampler;
import io.moemesh.model.sampling.TokenCounts;

/**
 * One request's share of a step: {@code tokens} fed at positions {@code [startPosition, startPosition + n)}
 * over its KV pages. When {@code sampler} is set, the chunk reaches the request's last token and the runner
 * samples the next one from the last row's logits.
 *
 * @param numPromptTokens positions below this are prompt tokens (the model's naive attention form)
 * @param blockTable the request's KV page ids in position order
 * @param sampler the request's sampler, or null for a chunk that ends inside the prompt
 * @param history the request's token counts for the penalties, or null with {@code sampler}
 * @param exportFrom prefill role: after each layer, hand that layer's KV of positions {@code [exportFrom,
 *     startPosition + n)} to the {@link KvConnector} — from below {@code startPosition} when the rows before the chunk
 *     came from the prefix cache or a store and were not handed over yet; -1 for a request that exports nothing
 */
public record ScheduledChunk(String requestId, int[] tokens, int startPosition, int numPromptTokens, int[] blockTable,
    Sampler sampler, TokenCounts history, int exportFrom) {

  public ScheduledChunk {
    if (exportFrom > startPosition) throw new IllegalArgumentException("exportFrom " + exportFrom + " is past the chunk's start " + startPosition);
  }

  public boolean exportsKv() {
    return exportFrom >= 0;
  }

  public int numTokens() {
    return tokens.length;
  }

  public boolean samples() {
    return sampler != null;
  }
}
