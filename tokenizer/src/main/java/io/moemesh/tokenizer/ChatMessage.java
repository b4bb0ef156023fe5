package io.moemesh.tokenizer;

import java.util.List;
import java.util.Objects;

/**
 * One message of a chat, as OpenAI's API and Hugging Face chat templates see it.
 *
 * @param role {@code system}, {@code user}, {@code assistant} or {@code tool}
 * @param content the text; null for an assistant message that only calls tools
 * @param toolCalls the tools an assistant message calls; empty otherwise (then templates see no {@code tool_calls})
 * @param toolCallId for a {@code tool} message, the id of the call it answers; else null
 */
public record ChatMessage(String role, String content, List<ToolCall> toolCalls, String toolCallId) {
  public ChatMessage {
    Objects.requireNonNull(role, "role");
    toolCalls = toolCalls == null ? List.of() : List.copyOf(toolCalls);
  }

  public ChatMessage(String role, String content) {
    this(role, content, List.of(), null);
  }

  public static ChatMessage system(String content) {
    return new ChatMessage("system", content);
  }

  public static ChatMessage user(String content) {
    return new ChatMessage("user", content);
  }

  public static ChatMessage assistant(String content) {
    return new ChatMessage("assistant", content);
  }

  /** An assistant turn calling tools, with optional text before the calls (null for none). */
  public static ChatMessage assistant(String content, List<ToolCall> toolCalls) {
    return new ChatMessage("assistant", content, toolCalls, null);
  }

  /** A tool's output for the call {@code toolCallId}. */
  public static ChatMessage tool(String content, String toolCallId) {
    return new ChatMessage("tool", content, List.of(), toolCallId);
  }

  /**
   * A function call requested by the assistant.
   *
   * @param id the call id (may be null)
   * @param name the function name
   * @param arguments the arguments as a JSON text, passed through verbatim
   */
  public record ToolCall(String id, String name, String arguments) {
    public ToolCall {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(arguments, "arguments");
    }
  }
}
