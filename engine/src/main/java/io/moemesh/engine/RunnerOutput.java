package io.moemesh.engine;

import io.moemesh.model.sampling.SampledToken;
import io.moemesh.model.sampling.Sampler;
import java.util.List;
import java.util.Map;

/**
 * What a step computed: the sampled token of every chunk that {@link ScheduledChunk#samples() samples}, and
 * the requests that failed on their own (e.g. a sampler rejecting a non-finite logits row). With speculative
 * decoding, a chunk's emitted tokens are its accepted drafts, in order, then its sampled token (the correction of
 * the first rejected draft, or the bonus token after the last accepted one).
 *
 * @param accepted per request, the drafts its verification accepted (absent: none)
 * @param drafts per request, the drafts proposed for the next step (absent: none)
 */
public record RunnerOutput(Map<String, SampledToken> sampled, Map<String, List<SampledToken>> accepted,
    Map<String, List<Sampler.Draft>> drafts, Map<String, String> failed) {

  public RunnerOutput {
    sampled = Map.copyOf(sampled);
    accepted = Map.copyOf(accepted);
    drafts = Map.copyOf(drafts);
    failed = Map.copyOf(failed);
  }

  public RunnerOutput(Map<String, SampledToken> sampled, Map<String, String> failed) {
    this(sampled, Map.of(), Map.of(), failed);
  }

  /** The drafts of {@code requestId} accepted this step (empty when none). */
  public List<SampledToken> acceptedOf(String requestId) {
    return accepted.getOrDefault(requestId, List.of());
  }
}
