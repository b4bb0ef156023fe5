package io.moemesh.engine;

import io.moemesh.model.sampling.SampledToken;
import java.util.List;
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
   * as it is computed (with speculative decoding on, the MTP layer's too, right after the MTP pass), sample the first
   * token, finish (a greedy request with speculation on: with the drafts after it, {@link RequestOutput#drafts}).
   * Positions this engine does not compute — a prefix its own cache holds, or one loaded from a store — are handed
   * over with the first computed chunk. (A prefix loaded from a store brings the main layers only: its MTP-layer rows
   * are whatever the pages held, which costs drafts their acceptance, never a token its correctness.)
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
   * <p>A prefill engine with speculative decoding on also exports the MTP layer's KV of the prompt and, for a greedy
   * request, the drafts it proposed after the first token; with them a decode engine that speculates verifies drafts
   * from its first step. Only greedy drafts travel: a draft is a token id, one-hot in its distribution, so nothing
   * else is needed to verify it. A sampled draft's distribution (a vocabulary of floats) stays behind, and its
   * request verifies drafts from its second decode step on.
   *
   * @param sampledDraws random draws the prefill's sampler took (0 if greedy, else 1), skipped here so a seeded
   *     request samples exactly as it would in one engine
   * @param withMtpKv whether the prompt's KV includes the MTP layer's (needed to propose drafts here)
   * @param drafts the prefill's greedy drafts after the first token, to verify in the first decode step (needs
   *     {@code withMtpKv}); empty when none
   */
  record Import(SampledToken firstToken, int sampledDraws, OnLoadFailure onFailure, boolean withMtpKv, List<Integer> drafts)
      implements KvHandoff {
    public Import {
      Objects.requireNonNull(firstToken, "firstToken");
      Objects.requireNonNull(onFailure, "onFailure");
      if (sampledDraws < 0) throw new IllegalArgumentException("sampledDraws must be ≥ 0, got " + sampledDraws);
      drafts = List.copyOf(drafts);
      if (!drafts.isEmpty() && !withMtpKv) throw new IllegalArgumentException("drafts come with the MTP layer's KV, which this import lacks");
    }

    /** An import of the main model's KV only: the prefill did not speculate. */
    public Import(SampledToken firstToken, int sampledDraws, OnLoadFailure onFailure) {
      this(firstToken, sampledDraws, onFailure, false, List.of());
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
