package io.moemesh.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import io.moemesh.tokenizer.ChatMessage;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** Parses OpenAI chat {@code messages} into the model's {@link ChatMessage}s (text content only). */
final class ChatMessages {
  private static final Set<String> ROLES = Set.of("system", "developer", "user", "assistant", "tool");

  private ChatMessages() {}

  static List<ChatMessage> parse(JsonNode messages) {
    if (messages == null || messages.isNull()) {
      throw ApiError.invalid("you must provide a messages parameter", "messages");
    }
    if (!messages.isArray()) throw JsonFields.wrongType("messages", "an array", messages);
    if (messages.isEmpty()) throw ApiError.invalid("messages must contain at least one message", "messages");
    List<ChatMessage> out = new ArrayList<>(messages.size());
    for (int i = 0; i < messages.size(); i++) out.add(message(messages.get(i), "messages[" + i + "]"));
    return out;
  }

  private static ChatMessage message(JsonNode m, String at) {
    if (!m.isObject()) throw JsonFields.wrongType(at, "an object", m);
    String role = JsonFields.string(m, "role", at + ".role");
    if (role == null) throw ApiError.invalid("Missing required parameter: '" + at + ".role'.", at + ".role");
    if (!ROLES.contains(role)) {
      throw ApiError.invalid("Invalid value: '" + role + "'. Supported values are: 'system', 'developer', 'user', "
          + "'assistant' and 'tool'.", at + ".role", "invalid_value");
    }
    List<ChatMessage.ToolCall> toolCalls = role.equals("assistant") ? toolCalls(m, at) : List.of();
    String content = content(JsonFields.get(m, "content"), at + ".content");
    if (content == null && toolCalls.isEmpty()) {
      throw ApiError.invalid("Missing required parameter: '" + at + ".content'.", at + ".content");
    }
    String toolCallId = JsonFields.string(m, "tool_call_id", at + ".tool_call_id");
    // Templates know system, user, assistant and tool; OpenAI's "developer" is the newer name of "system".
    String templateRole = role.equals("developer") ? "system" : role;
    return new ChatMessage(templateRole, content, toolCalls, toolCallId);
  }

  /** A string, or an array of {@code {"type": "text", "text": ...}} parts joined by newlines (as vLLM does). */
  private static String content(JsonNode content, String at) {
    if (content == null) return null;
    if (content.isTextual()) return content.asText();
    if (!content.isArray()) throw JsonFields.wrongType(at, "a string or an array of content parts", content);
    List<String> texts = new ArrayList<>();
    for (int j = 0; j < content.size(); j++) {
      JsonNode part = content.get(j);
      String type = part.isObject() ? JsonFields.string(part, "type", at + "[" + j + "].type") : null;
      if (!"text".equals(type)) {
        throw ApiError.invalid("Only text content parts are supported, got type " + type, at + "[" + j + "].type");
      }
      String text = JsonFields.string(part, "text", at + "[" + j + "].text");
      if (text == null) throw ApiError.invalid("Missing required parameter: '" + at + "[" + j + "].text'.", at);
      texts.add(text);
    }
    return String.join("\n", texts);
  }

  private static List<ChatMessage.ToolCall> toolCalls(JsonNode m, String at) {
    JsonNode calls = JsonFields.get(m, "tool_calls");
    if (calls == null) return List.of();
    if (!calls.isArray()) throw JsonFields.wrongType(at + ".tool_calls", "an array", calls);
    List<ChatMessage.ToolCall> out = new ArrayList<>();
    for (int j = 0; j < calls.size(); j++) {
      String where = at + ".tool_calls[" + j + "]";
      JsonNode call = calls.get(j);
      JsonNode function = call.isObject() ? JsonFields.get(call, "function") : null;
      if (function == null || !function.isObject()) {
        throw ApiError.invalid("Missing required parameter: '" + where + ".function'.", where + ".function");
      }
      String name = JsonFields.string(function, "name", where + ".function.name");
      String arguments = JsonFields.string(function, "arguments", where + ".function.arguments");
      if (name == null || arguments == null) {
        throw ApiError.invalid("tool calls need function.name and function.arguments", where + ".function");
      }
      out.add(new ChatMessage.ToolCall(JsonFields.string(call, "id", where + ".id"), name, arguments));
    }
    return out;
  }
}
