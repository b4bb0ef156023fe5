package io.moemesh.engine;

import io.moemesh.model.sampling.SampledToken;
import java.util.Objects;

/**
 * Where a request's prompt KV is computed and where it goes (docs/architecture.md, "Prefill/decode
 * disaggregation"): one engine does everything, or a prefill engine exports it and a decode engine imports it.
 */
public sealed interface KvHandoff {
  /** Prompt and decode in this engine. */
  KvHandoff LOCAL = new Local();

  record Local() implements KvHandoff {}

  /**
   * Prefill role: compute the prompt, hand each layer's KV of each chunk to the {@link KvConnector} as soon
   * as it is computed, sample the first token, finish. Positions this engine does not compute — a prefix its
   * own cache holds, or one loaded from a store — are handed over with the first computed chunk.
   *
   * @param prefixTokens the first positions a store holds, which the connector's {@code load} can fetch
   *     instead of computing them (0 = none); used only when this engine's own cache holds fewer, and
   *     computed after all if the load fails
   */
  record Export(int prefixTokens) implements KvHandoff {
    public static final Export FULL = new Export(0);

    public Export {
      if (prefixTokens < 0) throw new IllegalArgumentException("prefixTokens must be ≥ 0, got " + prefixTokens);
    }
  }

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
