package io.moemesh.gateway;

import io.moemesh.gateway.GenerationRequest.Endpoint;
import io.moemesh.gateway.GenerationRequest.Prompt;
import io.moemesh.tokenizer.ChatEncoder;
import io.moemesh.tokenizer.ChatTemplateException;
import java.util.ArrayList;
import java.util.List;

/**
 * Checks the model name, applies the chat template, tokenizes and fits each prompt plus its completion budget into
 * the context. Blocking work (template rendering, tokenization): callers run it on a worker thread.
 */
final class Preparer {
  private final ServedModel model;
  private final ChatEncoder.SpecialTokens specialTokensInContent;

  Preparer(ServedModel model, ChatEncoder.SpecialTokens specialTokensInContent) {
    this.model = model;
    this.specialTokensInContent = specialTokensInContent;
  }

  PreparedRequest prepare(GenerationRequest request) {
    if (!model.accepts(request.model())) throw ApiError.modelNotFound(request.model());
    try {
      request.sampling().validateFor(model.tokenizer().vocabSize());
    } catch (IllegalArgumentException e) { // the message starts with the parameter's wire name
      throw ApiError.invalid(e.getMessage(), e.getMessage().substring(0, Math.max(0, e.getMessage().indexOf(' '))));
    }
    List<int[]> prompts = new ArrayList<>();
    if (request.endpoint() == Endpoint.CHAT) {
      prompts.add(chatPrompt(request));
    } else {
      for (Prompt p : request.prompts()) prompts.add(tokens(p));
    }
    List<Integer> budgets = new ArrayList<>(prompts.size());
    for (int[] p : prompts) budgets.add(budget(p.length, request));
    return new PreparedRequest(request, List.copyOf(prompts), List.copyOf(budgets));
  }

  private int[] chatPrompt(GenerationRequest request) {
    var template = model.chatTemplate().orElseThrow(() -> ApiError.invalid(
        "The model " + model.id() + " has no chat template; use /v1/completions", "messages"));
    try { // the rendering holds its own BOS
      return ChatEncoder.encode(model.tokenizer(), template, request.messages(), true, specialTokensInContent);
    } catch (ChatTemplateException e) {
      throw ApiError.invalid("The chat template rejected the messages: " + e.getMessage(), "messages");
    }
  }

  private int[] tokens(Prompt prompt) {
    return switch (prompt) {
      case Prompt.Text t -> model.tokenizer().encode(t.text(), true);
      case Prompt.Tokens t -> {
        int vocab = model.tokenizer().vocabSize();
        for (int id : t.ids()) {
          if (id < 0 || id >= vocab) {
            throw ApiError.invalid("prompt token id " + id + " is outside the vocabulary [0, " + vocab + ")",
                "prompt");
          }
        }
        yield t.ids();
      }
    };
  }

  /** The completion budget: max_tokens, or what the context leaves; a prompt that cannot fit is the client's. */
  private int budget(int promptTokens, GenerationRequest request) {
    int context = model.contextLength();
    boolean chat = request.endpoint() == Endpoint.CHAT;
    String param = chat ? "messages" : "prompt";
    String where = chat ? "messages" : "prompt";
    Integer asked = request.maxTokens();
    int completion = asked == null ? context - promptTokens : asked;
    if (promptTokens + completion > context || completion < 1) {
      throw ApiError.invalid("This model's maximum context length is " + context + " tokens. However, you requested "
          + (promptTokens + Math.max(completion, 1)) + " tokens (" + promptTokens + " in the " + where + ", "
          + Math.max(completion, 1) + " in the completion). Please reduce the length of the " + where
          + " or completion.", param, "context_length_exceeded");
    }
    return completion;
  }
}
