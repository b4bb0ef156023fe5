package io.moemesh.engine;

import java.util.Arrays;

/**
 * Speculative decoding's counters since the engine started, with vLLM's meanings (exported later as
 * {@code vllm:spec_decode_num_drafts}, {@code _num_draft_tokens}, {@code _num_accepted_tokens} and
 * {@code _num_accepted_tokens_per_pos}):
 *
 * @param numDrafts verifications of a request's drafts (one per request per step that verified at least one draft)
 * @param numDraftTokens draft tokens verified
 * @param numAcceptedTokens draft tokens accepted
 * @param acceptedPerPosition {@code [i]}: drafts accepted at draft position i (0-based); the length is the
 *     configured number of speculative tokens. Acceptance is a prefix, so this never increases with i.
 */
public record SpecDecodeStats(long numDrafts, long numDraftTokens, long numAcceptedTokens, long[] acceptedPerPosition) {
  public static final SpecDecodeStats NONE = new SpecDecodeStats(0, 0, 0, new long[0]);

  public SpecDecodeStats {
    acceptedPerPosition = acceptedPerPosition.clone();
  }

  @Override
  public long[] acceptedPerPosition() {
    return acceptedPerPosition.clone();
  }

  /** Accepted over verified draft tokens, 0 before any. */
  public double acceptanceRate() {
    return numDraftTokens == 0 ? 0 : (double) numAcceptedTokens / numDraftTokens;
  }

  /** Tokens per verification step and request: 1 + the mean accepted drafts (vLLM's mean acceptance length). */
  public double meanAcceptanceLength() {
    return numDrafts == 0 ? 1 : 1 + (double) numAcceptedTokens / numDrafts;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof SpecDecodeStats s && s.numDrafts == numDrafts && s.numDraftTokens == numDraftTokens
        && s.numAcceptedTokens == numAcceptedTokens && Arrays.equals(s.acceptedPerPosition, acceptedPerPosition);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(numDrafts) * 31 + Arrays.hashCode(acceptedPerPosition);
  }

  @Override
  public String toString() {
    return "SpecDecodeStats[drafts=" + numDrafts + ", draftTokens=" + numDraftTokens + ", accepted=" + numAcceptedTokens
        + ", perPosition=" + Arrays.toString(acceptedPerPosition) + "]";
  }
}
