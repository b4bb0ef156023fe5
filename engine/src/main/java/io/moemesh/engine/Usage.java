package io.moemesh.engine;

/**
 * Token counts of one request, as OpenAI's {@code usage} reports them, plus its speculative decoding counts.
 *
 * @param promptTokens tokens in the prompt
 * @param completionTokens tokens generated so far
 * @param cachedPromptTokens prompt tokens whose KV came from the prefix cache (OpenAI's {@code cached_tokens})
 * @param draftTokens draft tokens verified for this request so far (0 without speculative decoding)
 * @param acceptedDraftTokens of those, the ones accepted (each one a token the request gained without a step of its own)
 */
public record Usage(int promptTokens, int completionTokens, int cachedPromptTokens, int draftTokens, int acceptedDraftTokens) {

  /** Usage of a request that verified no drafts. */
  public Usage(int promptTokens, int completionTokens, int cachedPromptTokens) {
    this(promptTokens, completionTokens, cachedPromptTokens, 0, 0);
  }

  public int totalTokens() {
    return promptTokens + completionTokens;
  }
}
