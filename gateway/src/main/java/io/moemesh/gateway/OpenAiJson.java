package io.moemesh.gateway;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moemesh.gateway.GenerationRequest.Endpoint;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * OpenAI's response shapes: {@code chat.completion}, {@code chat.completion.chunk}, {@code text_completion} (also
 * its chunks), usage, and both logprobs formats (chat: {@code {"content": [...]}} with bytes and top_logprobs;
 * completions: parallel {@code tokens}/{@code token_logprobs}/{@code top_logprobs}/{@code text_offset} arrays).
 */
final class OpenAiJson {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /** The fields every response and chunk of one request share. */
  record Header(String id, Endpoint endpoint, long created, String model) {}

  /** One choice of a non-streaming response. */
  record Choice(int index, String text, List<ChoiceEvent.TokenLogprob> logprobs, String finishReason) {}

  private OpenAiJson() {}

  static ObjectNode response(Header h, List<Choice> choices, boolean withLogprobs, ObjectNode usage) {
    ObjectNode root = base(h, h.endpoint().object);
    ArrayNode array = root.putArray("choices");
    for (Choice c : choices) {
      ObjectNode choice = array.addObject().put("index", c.index());
      if (h.endpoint() == Endpoint.CHAT) {
        choice.putObject("message").put("role", "assistant").put("content", c.text());
      } else {
        choice.put("text", c.text());
      }
      choice.set("logprobs", withLogprobs ? logprobs(h.endpoint(), c.logprobs(), 0) : F.nullNode());
      choice.put("finish_reason", c.finishReason());
    }
    root.set("usage", usage);
    return root;
  }

  /** A chat chunk whose delta announces the assistant role (the first chunk of each choice). */
  static ObjectNode roleChunk(Header h, int index, boolean usageField) {
    ObjectNode chunk = chunk(h, usageField);
    ObjectNode choice = chunk.withArray("choices").addObject().put("index", index);
    choice.putObject("delta").put("role", "assistant").put("content", "");
    choice.putNull("logprobs");
    choice.putNull("finish_reason");
    return chunk;
  }

  /** New text of one choice; {@code textOffset} is the choice's text length before it (completions logprobs). */
  static ObjectNode textChunk(Header h, ChoiceEvent e, boolean withLogprobs, int textOffset, boolean usageField) {
    ObjectNode chunk = chunk(h, usageField);
    ObjectNode choice = chunk.withArray("choices").addObject().put("index", e.index());
    if (h.endpoint() == Endpoint.CHAT) choice.putObject("delta").put("content", e.text());
    else choice.put("text", e.text());
    choice.set("logprobs", withLogprobs ? logprobs(h.endpoint(), e.logprobs(), textOffset) : F.nullNode());
    choice.putNull("finish_reason");
    return chunk;
  }

  /** The last chunk of one choice: empty delta (chat) or empty text, and the finish reason. */
  static ObjectNode finishChunk(Header h, int index, String finishReason, boolean usageField) {
    ObjectNode chunk = chunk(h, usageField);
    ObjectNode choice = chunk.withArray("choices").addObject().put("index", index);
    if (h.endpoint() == Endpoint.CHAT) choice.putObject("delta");
    else choice.put("text", "");
    choice.putNull("logprobs");
    choice.put("finish_reason", finishReason);
    return chunk;
  }

  /** {@code stream_options.include_usage}: the last chunk, with no choices and the usage. */
  static ObjectNode usageChunk(Header h, ObjectNode usage) {
    ObjectNode chunk = base(h, h.endpoint().chunkObject);
    chunk.putArray("choices");
    chunk.set("usage", usage);
    return chunk;
  }

  static ObjectNode usage(int promptTokens, int completionTokens, int cachedTokens) {
    ObjectNode usage = F.objectNode().put("prompt_tokens", promptTokens).put("completion_tokens", completionTokens)
        .put("total_tokens", promptTokens + completionTokens);
    usage.putObject("prompt_tokens_details").put("cached_tokens", cachedTokens);
    return usage;
  }

  private static ObjectNode chunk(Header h, boolean usageField) {
    ObjectNode chunk = base(h, h.endpoint().chunkObject);
    chunk.putArray("choices");
    if (usageField) chunk.putNull("usage"); // with include_usage, OpenAI sends "usage": null until the last chunk
    return chunk;
  }

  private static ObjectNode base(Header h, String object) {
    ObjectNode root = F.objectNode().put("id", h.id()).put("object", object).put("created", h.created())
        .put("model", h.model());
    root.putNull("system_fingerprint");
    return root;
  }

  private static ObjectNode logprobs(Endpoint endpoint, List<ChoiceEvent.TokenLogprob> tokens, int textOffset) {
    return endpoint == Endpoint.CHAT ? chatLogprobs(tokens) : completionLogprobs(tokens, textOffset);
  }

  private static ObjectNode chatLogprobs(List<ChoiceEvent.TokenLogprob> tokens) {
    ObjectNode root = F.objectNode();
    ArrayNode content = root.putArray("content");
    for (ChoiceEvent.TokenLogprob t : tokens) {
      ObjectNode entry = content.addObject().put("token", t.token()).put("logprob", t.logprob());
      entry.set("bytes", bytes(t.token()));
      ArrayNode top = entry.putArray("top_logprobs");
      for (ChoiceEvent.TopLogprob alt : t.top()) {
        ObjectNode a = top.addObject().put("token", alt.token()).put("logprob", alt.logprob());
        a.set("bytes", bytes(alt.token()));
      }
    }
    root.putNull("refusal");
    return root;
  }

  private static ObjectNode completionLogprobs(List<ChoiceEvent.TokenLogprob> tokens, int textOffset) {
    ObjectNode root = F.objectNode();
    ArrayNode texts = root.putArray("tokens");
    ArrayNode values = root.putArray("token_logprobs");
    ArrayNode tops = root.putArray("top_logprobs");
    ArrayNode offsets = root.putArray("text_offset");
    int offset = textOffset;
    for (ChoiceEvent.TokenLogprob t : tokens) {
      texts.add(t.token());
      values.add(t.logprob());
      ObjectNode top = tops.addObject();
      for (ChoiceEvent.TopLogprob alt : t.top()) top.put(alt.token(), alt.logprob());
      offsets.add(offset);
      offset += t.token().length();
    }
    return root;
  }

  private static ArrayNode bytes(String token) {
    ArrayNode out = F.arrayNode();
    for (byte b : token.getBytes(StandardCharsets.UTF_8)) out.add(b & 0xFF);
    return out;
  }
}
