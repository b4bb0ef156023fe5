package io.moemesh.gateway;

import io.moemesh.model.sampling.SamplingParams;
import io.moemesh.tokenizer.ChatMessage;
import java.util.List;

/**
 * A validated OpenAI request, either endpoint: what to generate from and how.
 *
 * @param messages the chat (chat completions); empty for completions
 * @param prompts the prompts (completions: each a text or token ids); empty for chat
 * @param maxTokens the completion budget per choice; null = up to the context length
 * @param topLogprobs null = no logprobs; k = the chosen token's logprob and the k most likely
 */
record GenerationRequest(
    Endpoint endpoint,
    String model,
    List<ChatMessage> messages,
    List<Prompt> prompts,
    int n,
    boolean stream,
    boolean includeUsage,
    Integer maxTokens,
    List<String> stop,
    SamplingParams sampling,
    Integer topLogprobs,
    String user) {

  enum Endpoint {
    CHAT("chatcmpl-", "chat.completion", "chat.completion.chunk"),
    COMPLETION("cmpl-", "text_completion", "text_completion");

    final String idPrefix;
    final String object;
    final String chunkObject;

    Endpoint(String idPrefix, String object, String chunkObject) {
      this.idPrefix = idPrefix;
      this.object = object;
      this.chunkObject = chunkObject;
    }
  }

  /** A completions prompt: text to tokenize, or token ids as given. */
  sealed interface Prompt {
    record Text(String text) implements Prompt {}

    record Tokens(int[] ids) implements Prompt {}
  }
}
