package io.moemesh.engine;

import io.moemesh.model.sampling.SampledToken;
import java.util.Map;

/**
 * What a step computed: the sampled token of every chunk that {@link ScheduledChunk#samples() samples}, and
 * the requests that failed on their own (e.g. a sampler rejecting a non-finite logits row).
 */
public record RunnerOutput(Map<String, SampledToken> sampled, Map<String, String> failed) {

  public RunnerOutput {
    sampled = Map.copyOf(sampled);
    failed = Map.copyOf(failed);
  }
}
