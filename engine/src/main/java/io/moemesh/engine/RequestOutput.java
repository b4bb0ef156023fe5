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
 */
public record RequestOutput(String requestId, List<SampledToken> newTokens, RequestStatus status, Usage usage, String error) {

  public RequestOutput {
    newTokens = List.copyOf(newTokens);
  }

  public boolean finished() {
    return status.isFinished();
  }

  public int[] tokenIds() {
    return newTokens.stream().mapToInt(SampledToken::tokenId).toArray();
  }
}
