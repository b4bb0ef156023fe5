package io.moemesh.model.sampling;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One sampled token and, when the request asked for them ({@link SamplingParams#logprobs()} not null),
 * its logprobs.
 *
 * @param tokenId the chosen token id, in [0, vocab)
 * @param logprobs present exactly when the request asked for logprobs
 */
public record SampledToken(int tokenId, Optional<Logprobs> logprobs) {

  public SampledToken {
    Objects.requireNonNull(logprobs, "logprobs");
  }

  /**
   * Raw logprobs: the log-softmax of the model's logits as given to the sampler, before penalties,
   * temperature and filtering (vLLM's default {@code logprobs_mode=raw_logprobs}). So a greedy or filtered
   * choice can still show a logprob below the top alternative's when a penalty moved it.
   *
   * @param logprob the chosen token's logprob (&le; 0; -&infin; only for a -&infin; logit)
   * @param top the {@code n} most likely tokens, logprob descending, ties by ascending id; may or may not
   *     include the chosen token (OpenAI returns both lists too)
   */
  public record Logprobs(double logprob, List<TokenLogprob> top) {
    public Logprobs {
      top = List.copyOf(top);
    }
  }

  /** One (token id, logprob) pair of a top-n list. */
  public record TokenLogprob(int tokenId, double logprob) {}
}
