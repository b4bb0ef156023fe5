package io.moemesh.engine;

import io.moemesh.model.sampling.Sampler;
import io.moemesh.model.sampling.TokenCounts;
import java.util.List;

/**
 * One request's share of a step: {@code tokens} fed at positions {@code [startPosition, startPosition + n)}
 * over its KV pages. When {@code sampler} is set, the chunk reaches the request's last token and the runner
 * samples the next one from the last row's logits (with speculation: verifies the drafts at the chunk's end, then
 * samples one more).
 *
 * @param numPromptTokens positions below this are prompt tokens (the model's naive attention form)
 * @param blockTable the request's KV page ids in position order
 * @param sampler the request's sampler, or null for a chunk that ends inside the prompt
 * @param history the request's token counts for the penalties, or null with {@code sampler}
 * @param exportFrom prefill role: after each layer, hand that layer's KV of positions {@code [exportFrom,
 *     startPosition + n)} to the {@link KvConnector} — from below {@code startPosition} when the rows before the chunk
 *     came from the prefix cache or a store and were not handed over yet; -1 for a request that exports nothing
 * @param speculation what the MTP module does for this chunk, or null when the engine does not speculate
 */
public record ScheduledChunk(String requestId, int[] tokens, int startPosition, int numPromptTokens, int[] blockTable,
    Sampler sampler, TokenCounts history, int exportFrom, Speculation speculation) {

  /**
   * A chunk's part in MTP speculative decoding. After the main model's pass, the MTP module runs over the chunk's
   * positions that stay computed (all of a prompt chunk; the fed token and the accepted drafts of a verification),
   * each position i with the token at i + 1 — the next prompt token, an accepted draft or the token just sampled —
   * so that the MTP layer's KV covers every position, as DeepSeek-V3 serves it. A chunk that samples then proposes
   * up to {@code numToPropose} drafts, chaining the module.
   *
   * @param drafts the draft tokens at the end of {@code tokens}, with the distributions they were drawn from, to
   *     verify before sampling; empty when the chunk verifies nothing
   * @param nextToken the token after the chunk's last position, for a chunk that samples nothing (inside the
   *     prompt); -1 when the chunk samples (the sampled token comes next)
   * @param numToPropose drafts to propose after this chunk (0: only the MTP layer's KV is computed)
   * @param drafter draws the drafts (its own random stream), or null when {@code numToPropose} is 0
   */
  public record Speculation(List<Sampler.Draft> drafts, int nextToken, int numToPropose, Sampler drafter) {
    public Speculation {
      drafts = List.copyOf(drafts);
      if (numToPropose < 0) throw new IllegalArgumentException("numToPropose must be ≥ 0, got " + numToPropose);
      if (numToPropose > 0 && drafter == null) throw new IllegalArgumentException("proposing drafts needs a drafter");
    }
  }

  public ScheduledChunk {
    if (exportFrom > startPosition) throw new IllegalArgumentException("exportFrom " + exportFrom + " is past the chunk's start " + startPosition);
    if (speculation != null) {
      if (speculation.drafts().size() >= tokens.length)
        throw new IllegalArgumentException(speculation.drafts().size() + " drafts in a chunk of " + tokens.length + " tokens");
      if (!speculation.drafts().isEmpty() && sampler == null) throw new IllegalArgumentException("drafts to verify in a chunk that samples nothing");
      if (sampler == null && speculation.nextToken() < 0) throw new IllegalArgumentException("a chunk inside the prompt needs the next token");
    }
  }

  public ScheduledChunk(String requestId, int[] tokens, int startPosition, int numPromptTokens, int[] blockTable, Sampler sampler,
      TokenCounts history, int exportFrom) {
    this(requestId, tokens, startPosition, numPromptTokens, blockTable, sampler, history, exportFrom, null);
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

  /** Draft tokens at the chunk's end, to verify (0 without speculation). */
  public int numDraftTokens() {
    return speculation == null ? 0 : speculation.drafts().size();
  }
}
