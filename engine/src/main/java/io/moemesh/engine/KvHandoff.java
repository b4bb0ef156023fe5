package io.moemesh.engine;

import io.moemesh.model.sampling.SampledToken;
import java.util.Objects;

/**
 * Where a request's prompt KV is computed and where it goes (ARCHITECTURE.md, "Prefill/decode
 * disaggregation"): one engine does everything, or a prefill engine exports it and a decode engine imports it.
 */
public sealed interface KvHandoff {
  /** Prompt and decode in this engine. */
  KvHandoff LOCAL = new Local();

  record Local() implements KvHandoff {}

  /**
   * Prefill role: compute the prompt, hand each layer's KV of each chunk to the {@link KvConnector} as soon
   * as it is computed, sample the first token, finish.
   */
  record Export() implements KvHandoff {}

  /**
   * Decode role: the prompt's KV arrives through the {@link KvConnector}; {@code firstToken} was sampled by the
   * prefill engine (it is part of the output but is not streamed again).
   *
   * @param sampledDraws random draws the prefill's sampler took (0 if greedy, else 1), skipped here so a seeded
   *     request samples exactly as it would in one engine
   */
  record Import(SampledToken firstToken, int sampledDraws, OnLoadFailure onFailure) implements KvHandoff {
    public Import {
      Objects.requireNonNull(firstToken, "firstToken");
      Objects.requireNonNull(onFailure, "onFailure");
      if (sampledDraws < 0) throw new IllegalArgumentException("sampledDraws must be ≥ 0, got " + sampledDraws);
    }
  }

  /** What a decode engine does when the prompt's KV cannot be loaded (lost, expired, store down). */
  enum OnLoadFailure {
    /** Finish the request with {@link RequestStatus#FINISHED_ERROR} and the reason. */
    FAIL,
    /** Compute the prompt here instead. */
    RECOMPUTE
  }
}
