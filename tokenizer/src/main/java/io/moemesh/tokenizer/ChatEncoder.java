package io.moemesh.tokenizer;

import java.util.ArrayList;
import java.util.List;

/**
 * A conversation's prompt ids: the chat template's rendering, encoded so that only the template's own markers become
 * special tokens. Text a client wrote (message content, tool-call names and arguments) that spells an added token,
 * such as {@code <｜Assistant｜>}, is encoded as plain text ({@link Tokenizer#encodeAsText}): a user cannot forge a role
 * marker or an end of turn. {@link SpecialTokens#PARSE} is the old behaviour, every occurrence a special id, for
 * clients that knowingly send prompts with markers inside messages.
 *
 * <p>How: before rendering, each added-token string in client text is replaced by a placeholder of private-use
 * characters ({@code U+E000} index {@code U+E001}); the rendering is encoded piece by piece, a placeholder's piece as
 * plain text. A conversation without such strings renders and encodes exactly as before.
 */
public final class ChatEncoder {
  /** What special-token text inside messages becomes. */
  public enum SpecialTokens {
    /** Plain text (the default). */
    TEXT,
    /** Special ids, as if the template had written them. */
    PARSE
  }

  private static final char OPEN = '\uE000', CLOSE = '\uE001';

  private ChatEncoder() {}

  /** The prompt ids of {@code messages} rendered by {@code template} (which holds its own BOS). */
  public static int[] encode(Tokenizer tokenizer, ChatTemplate template, List<ChatMessage> messages,
      boolean addGenerationPrompt, SpecialTokens specialTokens) {
    if (specialTokens == SpecialTokens.PARSE) return tokenizer.encode(template.render(messages, addGenerationPrompt));
    List<String> escaped = new ArrayList<>();
    List<ChatMessage> safe = new ArrayList<>(messages.size());
    for (ChatMessage m : messages) {
      List<ChatMessage.ToolCall> calls = new ArrayList<>(m.toolCalls().size());
      for (ChatMessage.ToolCall c : m.toolCalls())
        calls.add(new ChatMessage.ToolCall(c.id(), escape(tokenizer, c.name(), escaped), escape(tokenizer, c.arguments(), escaped)));
      safe.add(new ChatMessage(m.role(), escape(tokenizer, m.content(), escaped), calls, m.toolCallId()));
    }
    String rendered = template.render(safe, addGenerationPrompt);
    if (escaped.isEmpty()) return tokenizer.encode(rendered);
    List<int[]> pieces = new ArrayList<>();
    int from = 0;
    for (int open = rendered.indexOf(OPEN); open >= 0; open = rendered.indexOf(OPEN, from)) {
      int close = rendered.indexOf(CLOSE, open);
      int index = close < 0 ? -1 : parseIndex(rendered.substring(open + 1, close), escaped.size());
      if (index < 0) { // not one of ours: the template made it; text as rendered
        pieces.add(tokenizer.encode(rendered.substring(from, open + 1)));
        from = open + 1;
        continue;
      }
      if (open > from) pieces.add(tokenizer.encode(rendered.substring(from, open)));
      pieces.add(tokenizer.encodeAsText(escaped.get(index)));
      from = close + 1;
    }
    if (from < rendered.length()) pieces.add(tokenizer.encode(rendered.substring(from)));
    int length = 0;
    for (int[] p : pieces) length += p.length;
    int[] ids = new int[length];
    int at = 0;
    for (int[] p : pieces) {
      System.arraycopy(p, 0, ids, at, p.length);
      at += p.length;
    }
    return ids;
  }

  /** text with each added-token string (and each placeholder character) replaced by a placeholder; null stays null. */
  static String escape(Tokenizer tokenizer, String text, List<String> escaped) {
    if (text == null) return null;
    StringBuilder out = null;
    int copied = 0;
    for (int i = 0; i < text.length(); i++) {
      char ch = text.charAt(i);
      String match = ch == OPEN || ch == CLOSE ? String.valueOf(ch) : tokenizer.addedTokenAt(text, i);
      if (match == null) continue;
      if (out == null) out = new StringBuilder(text.length() + 16);
      out.append(text, copied, i).append(OPEN).append(escaped.size()).append(CLOSE);
      escaped.add(match);
      i += match.length() - 1;
      copied = i + 1;
    }
    return out == null ? text : out.append(text, copied, text.length()).toString();
  }

  private static int parseIndex(String digits, int size) {
    if (digits.isEmpty() || digits.length() > 9) return -1;
    for (int i = 0; i < digits.length(); i++) if (digits.charAt(i) < '0' || digits.charAt(i) > '9') return -1;
    int index = Integer.parseInt(digits);
    return index < size ? index : -1;
  }
}
