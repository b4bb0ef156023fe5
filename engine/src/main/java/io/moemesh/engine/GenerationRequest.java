package io.moemesh.engine;

import io.moemesh.model.sampling.SamplingParams;
import java.util.Objects;

/**
 * What a client asks the engine for: a tokenized prompt, how to sample, and how many tokens at most.
 *
 * @param id unique among the engine's live requests (the gateway's request id)
 * @param promptTokenIds the prompt, already tokenized; at least one token
 * @param sampling sampling parameters (validated against the vocabulary on submit)
 * @param maxTokens the most tokens to generate, ≥ 1
 * @param priority smaller runs sooner under {@link SchedulerConfig.Policy#PRIORITY} (vLLM's convention); ignored by FCFS
 * @param handoff where the prompt's KV is computed and where it goes (prefill/decode disaggregation)
 */
public record GenerationRequest(String id, int[] promptTokenIds, SamplingParams sampling, int maxTokens, int priority,
    KvHandoff handoff) {

  public GenerationRequest {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(promptTokenIds, "promptTokenIds");
    Objects.requireNonNull(sampling, "sampling");
    if (id.isBlank()) throw new IllegalArgumentException("request id must not be blank");
    if (promptTokenIds.length == 0) throw new IllegalArgumentException("request " + id + ": the prompt is empty");
    if (maxTokens < 1) throw new IllegalArgumentException("request " + id + ": max_tokens must be at least 1, got " + maxTokens);
    Objects.requireNonNull(handoff, "handoff");
    if (handoff instanceof KvHandoff.Export export) {
      if (maxTokens != 1)
        throw new IllegalArgumentException("request " + id + ": a prefill (KV export) request generates exactly its first token, not " + maxTokens);
      if (export.prefixTokens() >= promptTokenIds.length)
        throw new IllegalArgumentException("request " + id + ": a stored prefix of " + export.prefixTokens() + " tokens leaves nothing of the "
            + promptTokenIds.length + "-token prompt to compute (the first token needs the last position's logits)");
    }
    if (handoff instanceof KvHandoff.Import && maxTokens < 2)
      throw new IllegalArgumentException("request " + id + ": a decode (KV import) request needs max_tokens ≥ 2 (the first token is the prefill's)");
    promptTokenIds = promptTokenIds.clone();
  }

  public GenerationRequest(String id, int[] promptTokenIds, SamplingParams sampling, int maxTokens, int priority) {
    this(id, promptTokenIds, sampling, maxTokens, priority, KvHandoff.LOCAL);
  }

  public static GenerationRequest of(String id, int[] promptTokenIds, SamplingParams sampling, int maxTokens) {
    return new GenerationRequest(id, promptTokenIds, sampling, maxTokens, 0);
  }

  public GenerationRequest withHandoff(KvHandoff h) {
    return new GenerationRequest(id, promptTokenIds, sampling, maxTokens, priority, h);
  }

  @Override
  public int[] promptTokenIds() {
    return promptTokenIds.clone();
  }

  public int numPromptTokens() {
    return promptTokenIds.length;
  }
}
