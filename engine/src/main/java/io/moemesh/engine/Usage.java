package io.moemesh.engine;

/**
 * Token counts of one request, as OpenAI's {@code usage} reports them.
 *
 * @param promptTokens tokens in the prompt
 * @param completionTokens tokens generated so far
 * @param cachedPromptTokens prompt tokens whose KV came from the prefix cache (OpenAI's {@code cached_tokens})
 */
public record Usage(int promptTokens, int completionTokens, int cachedPromptTokens) {
  public int totalTokens() {
    return promptTokens + completionTokens;
  }
}
