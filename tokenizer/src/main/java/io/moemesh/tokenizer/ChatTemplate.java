package io.moemesh.tokenizer;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.objects.date.StrftimeFormatter;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import jinjava.javax.el.CompositeELResolver;

/**
 * A Hugging Face chat template ({@code tokenizer_config.json}'s {@code chat_template}, Python Jinja) rendered with
 * Jinjava, set up like {@code transformers}' {@code apply_chat_template} environment: {@code trim_blocks} and
 * {@code lstrip_blocks}, the variables {@code messages}, {@code add_generation_prompt}, {@code bos_token},
 * {@code eos_token}, {@code pad_token}, {@code unk_token} plus any extra context (e.g. {@code tools}), the functions
 * {@code raise_exception(message)} and {@code strftime_now(format)}, a Python-exact {@code tojson} filter
 * ({@link PythonJson}) and Python {@code str} methods ({@link PythonStringMethods}). Jinjava itself provides
 * {@code namespace(...)}, {@code loop}, {@code is defined}/{@code is none}/{@code is string}, {@code in} on strings,
 * lists and dicts, negative indices and slices.
 *
 * <p>The result is the prompt text, BOS included if the template writes {@code bos_token}; encode it with
 * {@link Tokenizer#encode(String)} (no second BOS), as {@code apply_chat_template(tokenize=True)} does.
 *
 * <p>Known gaps, none of which DeepSeek's templates touch: Jinja's filtered loop ({@code for x in xs if cond})
 * renders nothing in Jinjava; an unknown filter is ignored instead of failing; booleans print as {@code true} (Python:
 * {@code True}) and lists in Java's {@code [a, b]} form; {@code 'a' + none} gives {@code anull} instead of failing.
 *
 * <p>Message content and every other context value are data, never template source (Jinjava's nested
 * interpretation is off), and a render writes at most {@link #MAX_OUTPUT_CHARS} characters.
 *
 * <p>Immutable and thread-safe; renders may run concurrently.
 */
public final class ChatTemplate {
  /**
   * The most characters a render may write: far above any prompt a model takes (128 K tokens are ~0.5 M characters),
   * far below what would hurt the process. A template that writes more fails to render.
   */
  public static final long MAX_OUTPUT_CHARS = 16L << 20;

  private static final Jinjava JINJAVA = createJinjava();

  private final String source;
  private final Map<String, String> specialTokens;

  /**
   * @param source the Jinja template
   * @param specialTokens template variables such as {@code bos_token} → its text
   */
  public ChatTemplate(String source, Map<String, String> specialTokens) {
    this.source = Objects.requireNonNull(source, "source");
    this.specialTokens = Map.copyOf(specialTokens);
  }

  public static ChatTemplate of(String source, String bosToken, String eosToken) {
    return new ChatTemplate(source, Map.of("bos_token", bosToken, "eos_token", eosToken));
  }

  static Map<String, String> specialTokensOf(TokenizerConfig config) {
    Map<String, String> tokens = new HashMap<>();
    if (config.bosToken() != null) tokens.put("bos_token", config.bosToken());
    if (config.eosToken() != null) tokens.put("eos_token", config.eosToken());
    if (config.padToken() != null) tokens.put("pad_token", config.padToken());
    if (config.unkToken() != null) tokens.put("unk_token", config.unkToken());
    return tokens;
  }

  public String source() {
    return source;
  }

  public String render(List<ChatMessage> messages, boolean addGenerationPrompt) {
    return render(messages, addGenerationPrompt, Map.of());
  }

  /**
   * Renders the conversation.
   *
   * @param extraContext further template variables, e.g. {@code tools} (a list of OpenAI tool objects as maps) or
   *     a template's own switches such as {@code thinking}
   * @throws ChatTemplateException if the template raises an exception or fails to render
   */
  public String render(List<ChatMessage> messages, boolean addGenerationPrompt, Map<String, ?> extraContext) {
    List<Map<String, Object>> maps = new ArrayList<>(messages.size());
    for (ChatMessage m : messages) maps.add(toMap(m));
    return renderMessages(maps, addGenerationPrompt, extraContext);
  }

  /** Renders messages given as OpenAI-shaped maps (e.g. with list-valued {@code content}), passed through as is. */
  public String renderMessages(
      List<? extends Map<String, ?>> messages, boolean addGenerationPrompt, Map<String, ?> extraContext) {
    Map<String, Object> context = new HashMap<>(extraContext);
    context.putAll(specialTokens);
    context.put("messages", messages);
    context.put("add_generation_prompt", addGenerationPrompt);
    RenderResult result = JINJAVA.renderForResult(source, context);
    for (TemplateError error : result.getErrors()) {
      String raised = raisedMessage(error.getException());
      if (raised != null) throw new ChatTemplateException(raised, true);
    }
    for (TemplateError error : result.getErrors()) {
      if (error.getSeverity() == TemplateError.ErrorType.FATAL) {
        throw new ChatTemplateException("chat template failed at line " + error.getLineno() + ": "
            + error.getMessage(), false);
      }
    }
    return result.getOutput();
  }

  /** A message as templates expect it: keys only for what is present, {@code content} always (maybe None). */
  static Map<String, Object> toMap(ChatMessage m) {
    Map<String, Object> map = new LinkedHashMap<>();
    map.put("role", m.role());
    map.put("content", m.content());
    if (!m.toolCalls().isEmpty()) {
      List<Map<String, Object>> calls = new ArrayList<>();
      for (ChatMessage.ToolCall call : m.toolCalls()) {
        Map<String, Object> c = new LinkedHashMap<>();
        if (call.id() != null) c.put("id", call.id());
        c.put("type", "function");
        Map<String, Object> function = new LinkedHashMap<>();
        function.put("name", call.name());
        function.put("arguments", call.arguments());
        c.put("function", function);
        calls.add(c);
      }
      map.put("tool_calls", calls);
    }
    if (m.toolCallId() != null) map.put("tool_call_id", m.toolCallId());
    return map;
  }

  private static String raisedMessage(Throwable t) {
    for (; t != null; t = t.getCause()) if (t instanceof RaisedByTemplate r) return r.getMessage();
    return null;
  }

  /** Thrown by the template function {@code raise_exception}. */
  static final class RaisedByTemplate extends RuntimeException {
    RaisedByTemplate(String message) {
      super(message);
    }
  }

  /** Template function {@code raise_exception(message)}. */
  public static Object raiseException(String message) {
    throw new RaisedByTemplate(message);
  }

  /** Template function {@code strftime_now(format)}: the current local time, Python strftime format. */
  public static String strftimeNow(String format) {
    return StrftimeFormatter.format(ZonedDateTime.now(), format);
  }

  private static Jinjava createJinjava() {
    CompositeELResolver resolvers = new CompositeELResolver();
    resolvers.add(new PythonStringMethods());
    resolvers.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_ONLY);
    JinjavaConfig config = JinjavaConfig.newBuilder()
        .withTrimBlocks(true)
        .withLstripBlocks(true)
        // Message content is data: Jinjava otherwise renders template syntax found in an expression's value again
        // ("{{ 7*7 }}" in a message became 49; nested loops in 114 bytes took 18 s and ~900 MB).
        .withNestedInterpretationEnabled(false)
        .withMaxOutputSize(MAX_OUTPUT_CHARS)
        .withElResolver(resolvers)
        // Python Jinja semantics: "-" also trims around {{ }} expressions; dict keys are expressions. Not the
        // "natural" operator precedence: it reads `not x is defined` as `(not x) is defined`, unlike Jinja.
        .withLegacyOverrides(LegacyOverrides.newBuilder()
            .withUseTrimmingForNotesAndExpressions(true)
            .withParseWhitespaceControlStrictly(true)
            .withEvaluateMapKeys(true)
            .build())
        .build();
    Jinjava jinjava = new Jinjava(config);
    jinjava.getGlobalContext().registerFunction(
        new ELFunctionDefinition("", "raise_exception", ChatTemplate.class, "raiseException", String.class));
    jinjava.getGlobalContext().registerFunction(
        new ELFunctionDefinition("", "strftime_now", ChatTemplate.class, "strftimeNow", String.class));
    jinjava.getGlobalContext().registerFilter(new PythonJson());
    return jinjava;
  }
}
