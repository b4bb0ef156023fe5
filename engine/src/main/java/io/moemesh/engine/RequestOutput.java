package io.moemesh.engine;

import io.moemesh.model.sampling.SampledToken;
import java.util.List;

/**
 * One update of a request's stream: the tokens it gained this step (one, or several with speculative
 * decoding), and, on the last update, how it finished.
 *
 * @param newTokens tokens sampled this step, with logprobs when asked; empty for a finish without a token
 * @param status the request's status after this step
 * @param usage token counts so far
 * @param error why the request failed ({@link RequestStatus#FINISHED_ERROR}), else null
 * @param drafts prefill role ({@link KvHandoff.Export}), on the last update: the greedy drafts proposed after the
 *     first token, for the decode engine's first step ({@link KvHandoff.Import#drafts}); else empty
 */
public record RequestOutput(String requestId, List<SampledToken> newTokens, RequestStatus status, Usage usage, String error,
    List<Integer> drafts) {

  public RequestOutput {
    newTokens = List.copyOf(newTokens);
    drafts = List.copyOf(drafts);
  }

  public RequestOutput(String requestId, List<SampledToken> newTokens, RequestStatus status, Usage usage, String error) {
    this(requestId, newTokens, status, usage, error, List.of());
  }

  public boolean finished() {
    return status.isFinished();
  }

  public int[] tokenIds() {
    return newTokens.stream().mapToInt(SampledToken::tokenId).toArray();
  }
}
