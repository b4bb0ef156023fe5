package io.moemesh.tokenizer;

import static io.moemesh.tokenizer.ChatMessage.assistant;
import static io.moemesh.tokenizer.ChatMessage.system;
import static io.moemesh.tokenizer.ChatMessage.tool;
import static io.moemesh.tokenizer.ChatMessage.user;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.tokenizer.ChatMessage.ToolCall;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Expected strings are what Python's jinja2 renders for the same template in Hugging Face's environment
 * ({@code trim_blocks}, {@code lstrip_blocks}); they were cross-checked against DeepSeek-V3's published template.
 */
class ChatTemplateTest {
  static final String BOS = "<｜begin▁of▁sentence｜>";
  static final ChatTemplate REFERENCE = ChatTemplate.of(resource("deepseek_v3_reference.jinja"), BOS,
      "<｜end▁of▁sentence｜>");
  static final ChatTemplate SHIPPED = ChatTemplate.of(TokenizerFiles.chatTemplate(), BOS, "<｜end▁of▁sentence｜>");

  static final List<ChatMessage> TOOL_CONVERSATION = List.of(
      user("What's the weather in Paris, and the time?"),
      assistant(null, List.of(
          new ToolCall("call_1", "get_weather", "{\"city\": \"Paris\"}"),
          new ToolCall("call_2", "get_time", "{\"tz\": \"CET\"}"))),
      tool("{\"temp_c\": 21}", "call_1"),
      tool("14:00", "call_2"),
      assistant("It is 21 °C and 14:00 in Paris."));

  static String resource(String name) {
    try (InputStream in = ChatTemplateTest.class.getResourceAsStream(name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  /** What a client writes in a message is text for the model, never template code for the gateway. */
  @Nested
  class ContentIsData {
    @Test
    void templateSyntaxInContentIsRenderedAsWritten() {
      for (String content : List.of("{{ 7*7 }}", "{{ messages }}", "{% set x = 1 %}{{ x }}", "{# note #}",
          "{{ raise_exception('boom') }}", "{%- if true -%}yes{%- endif -%}")) {
        assertThat(SHIPPED.render(List.of(user(content)), true)).as(content)
            .isEqualTo(BOS + "<｜User｜>" + content + "<｜Assistant｜>");
      }
    }

    /** 114 bytes of nested loops: data now, rendered as written in no time (it was 18 s and ~900 MB). */
    @Test
    void nestedLoopsInContentDoNoWork() {
      String loops = "{% for a in range(999) %}{% for b in range(999) %}{% for c in range(999) %}x{% endfor %}{% endfor %}{% endfor %}";
      long start = System.nanoTime();
      String rendered = SHIPPED.render(List.of(user(loops), assistant("ok"), user(loops)), true);
      assertThat((System.nanoTime() - start) / 1e9).isLessThan(5.0);
      assertThat(rendered).contains("<｜User｜>" + loops + "<｜Assistant｜>ok").endsWith(loops + "<｜Assistant｜>");
    }

    /** The template's own output is bounded: a template that writes without end fails instead of filling memory. */
    @Test
    void aRenderPastTheOutputLimitFails() {
      var runaway = ChatTemplate.of("{% for i in range(100000) %}{% for m in messages %}{{ m['content'] }}{% endfor %}{% endfor %}", BOS, "</s>");
      String kilobyte = "k".repeat(64 << 10);
      assertThatThrownBy(() -> runaway.render(List.of(user(kilobyte), user(kilobyte), user(kilobyte)), false))
          .isInstanceOf(ChatTemplateException.class);
    }
  }

  @Nested
  class DeepSeekV3Format {
    @Test
    void singleUserTurnWithGenerationPrompt() {
      assertThat(REFERENCE.render(List.of(user("Hello")), true))
          .isEqualTo(BOS + "<｜User｜>Hello<｜Assistant｜>");
      assertThat(REFERENCE.render(List.of(user("Hello")), false)).isEqualTo(BOS + "<｜User｜>Hello");
    }

    @Test
    void systemPromptGoesBeforeTheFirstUserTurn() {
      List<ChatMessage> chat = List.of(system("You are helpful."), user("Hi"), assistant("Hello!"),
          user("How are you?"));
      assertThat(REFERENCE.render(chat, true)).isEqualTo(BOS + "You are helpful.<｜User｜>Hi<｜Assistant｜>Hello!"
          + "<｜end▁of▁sentence｜><｜User｜>How are you?<｜Assistant｜>");
    }

    @Test
    void systemPromptsAreJoinedByABlankLine() {
      List<ChatMessage> chat = List.of(system("Rule one."), user("Hi"), system("Rule two."), user("Yo"));
      assertThat(REFERENCE.render(chat, true))
          .isEqualTo(BOS + "Rule one.\n\nRule two.<｜User｜>Hi<｜User｜>Yo<｜Assistant｜>");
    }

    @Test
    void reasoningBeforeThinkEndIsDroppedFromEarlierTurns() {
      List<ChatMessage> chat = List.of(user("2+2?"), assistant("<think>\nadd them\n</think>\n\nThe answer is 4."),
          user("and 3+3?"));
      assertThat(REFERENCE.render(chat, true)).isEqualTo(BOS + "<｜User｜>2+2?<｜Assistant｜>\n\nThe answer is 4."
          + "<｜end▁of▁sentence｜><｜User｜>and 3+3?<｜Assistant｜>");
    }

    @Test
    void contentEndingInThinkEndKeepsPythonSplitSemantics() {
      // Python: "x</think>".split("</think>")[-1] == "" (Java's String.split would drop the empty tail).
      List<ChatMessage> chat = List.of(user("x"), assistant("<think>only thoughts</think>"));
      assertThat(REFERENCE.render(chat, false)).isEqualTo(BOS + "<｜User｜>x<｜Assistant｜><｜end▁of▁sentence｜>");
    }

    @Test
    void toolCallsAndToolOutputs() {
      assertThat(REFERENCE.render(TOOL_CONVERSATION, false)).isEqualTo(BOS
          + "<｜User｜>What's the weather in Paris, and the time?"
          + "<｜Assistant｜><｜tool▁calls▁begin｜>"
          + "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>\n"
          + "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{\"tz\": \"CET\"}\n```<｜tool▁call▁end｜>"
          + "<｜tool▁calls▁end｜><｜end▁of▁sentence｜>"
          + "<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>{\"temp_c\": 21}<｜tool▁output▁end｜>"
          + "<｜tool▁output▁begin｜>14:00<｜tool▁output▁end｜><｜tool▁outputs▁end｜>"
          + "It is 21 °C and 14:00 in Paris.<｜end▁of▁sentence｜>");
    }

    @Test
    void toolCallAfterTextAndPendingToolOutputsGetNoGenerationPrompt() {
      List<ChatMessage> chat = List.of(user("Weather?"),
          assistant("Let me check.", List.of(new ToolCall("c", "get_weather", "{}"))), tool("sunny", "c"));
      assertThat(REFERENCE.render(chat, true)).isEqualTo(BOS + "<｜User｜>Weather?<｜Assistant｜>Let me check."
          + "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{}\n```"
          + "<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜><｜tool▁outputs▁begin｜>"
          + "<｜tool▁output▁begin｜>sunny<｜tool▁output▁end｜><｜tool▁outputs▁end｜>");
    }

    @Test
    void unicodeAndWhitespaceArePassedThrough() {
      List<ChatMessage> chat = List.of(user("天气怎么样？😀"), assistant("晴天 ☀️"), user("  spaced  \n\n"));
      assertThat(REFERENCE.render(chat, true)).isEqualTo(BOS + "<｜User｜>天气怎么样？😀<｜Assistant｜>晴天 ☀️"
          + "<｜end▁of▁sentence｜><｜User｜>  spaced  \n\n<｜Assistant｜>");
    }
  }

  @Nested
  class ShippedTemplate {
    @Test
    void rendersLikeTheReferenceOnOrdinaryConversations() {
      List<List<ChatMessage>> chats = List.of(
          List.of(user("Hello")),
          List.of(system("S1"), system("S2"), user("Hi"), assistant("<think>t</think>Yo"), user("Again")),
          TOOL_CONVERSATION);
      for (List<ChatMessage> chat : chats) {
        for (boolean prompt : new boolean[] {true, false}) {
          assertThat(SHIPPED.render(chat, prompt)).isEqualTo(REFERENCE.render(chat, prompt));
        }
      }
    }

    @Test
    void opensEveryToolCallTurnUnlikeThePublishedTemplate() {
      List<ChatMessage> chat = List.of(user("a"), assistant(null, List.of(new ToolCall(null, "f", "{}"))),
          tool("1", null), assistant("ok"), user("b"), assistant(null, List.of(new ToolCall(null, "g", "{}"))));
      String call = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>g\n```json\n{}\n```<｜tool▁call▁end｜>";
      assertThat(SHIPPED.render(chat, false)).contains("<｜User｜>b<｜Assistant｜><｜tool▁calls▁begin｜>" + call);
      assertThat(REFERENCE.render(chat, false)).contains("<｜User｜>b\n" + call); // DeepSeek's quirk, reproduced
    }

    @Test
    void rejectsUnknownRoles() {
      assertThatThrownBy(() -> SHIPPED.render(List.of(new ChatMessage("robot", "beep")), true))
          .isInstanceOf(ChatTemplateException.class).hasMessage("Unsupported message role: robot")
          .matches(e -> ((ChatTemplateException) e).raisedByTemplate());
    }

    @Test
    void generatedTokenizerRendersAndEncodesMarkersAsSingleIds(@TempDir Path dir) throws IOException {
      TokenizerFiles.write(dir, 1024, 0, 1);
      try (Tokenizer t = Tokenizer.load(dir)) {
        String prompt = t.chatTemplate().orElseThrow().render(TOOL_CONVERSATION, true);
        assertThat(prompt).startsWith(BOS);
        int[] ids = t.encode(prompt);
        assertThat(ids[0]).isEqualTo(t.bosId());
        for (String marker : List.of("<｜User｜>", "<｜tool▁calls▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁outputs▁end｜>")) {
          assertThat(ids).contains(t.tokenToId(marker).getAsInt());
        }
        assertThat(t.decode(ids, false)).isEqualTo(prompt);
      }
    }
  }

  @Nested
  class JinjaFeatures {
    private String render(String template, Map<String, ?> extra) {
      return ChatTemplate.of(template, "<s>", "</s>").render(List.of(user("Hello"), assistant("Hi")), false, extra);
    }

    @Test
    void raiseExceptionBecomesAChatTemplateException() {
      String template = "{% if messages[0]['role'] != 'system' %}{{ raise_exception('System message first!') }}"
          + "{% endif %}";
      assertThatThrownBy(() -> render(template, Map.of()))
          .isInstanceOf(ChatTemplateException.class).hasMessage("System message first!");
    }

    @Test
    void syntaxErrorsAreReported() {
      assertThatThrownBy(() -> render("{% if %}x{% endif %}", Map.of()))
          .isInstanceOf(ChatTemplateException.class).hasMessageContaining("line 1")
          .matches(e -> !((ChatTemplateException) e).raisedByTemplate());
    }

    @Test
    void tojsonFormatsLikePython() {
      Map<String, Object> function = new LinkedHashMap<>();
      function.put("name", "get_weather");
      function.put("description", "Weather \"now\" in 北京\n");
      function.put("numbers", List.of(1, 2.5, 1e-5, 1e20, true));
      function.put("empty", Map.of());
      Map<String, Object> extra = Map.of("tools", List.of(Map.of("function", function)));
      assertThat(render("{{ tools | tojson }}", extra)).isEqualTo("[{\"function\": {\"name\": \"get_weather\", "
          + "\"description\": \"Weather \\\"now\\\" in 北京\\n\", \"numbers\": [1, 2.5, 1e-05, 1e+20, true], "
          + "\"empty\": {}}}]");
      assertThat(render("{{ tools[0].function.numbers | tojson(indent=2) }}", extra))
          .isEqualTo("[\n  1,\n  2.5,\n  1e-05,\n  1e+20,\n  true\n]");
      assertThat(render("{{ messages[0] | tojson }}", Map.of())).isEqualTo("{\"role\": \"user\", \"content\": \"Hello\"}");
    }

    @Test
    void pythonStringMethods() {
      String template = "{{ '  a b\\n'.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ 'a,b,,c'.split(',') | length }}|"
          + "{{ ' a  b '.split() | join('+') }}|{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith(['x', 'c']) }}|"
          + "{{ 'Hello'.lower() }}{{ 'abc'.upper() }}|{{ 'a-b-c'.rsplit('-', 1)[0] }}|{{ 'l1\\nl2'.splitlines()[1] }}|"
          + "{{ ', '.join(['x', 'y']) }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'hello world'.title() }}|"
          + "{{ ' x '.lstrip() }}.{{ ' x '.rstrip() }}.";
      assertThat(render(template, Map.of()))
          .isEqualTo("a b|hi|4|a+b|true|true|helloABC|a-b|l2|x, y|bba|Hello World|x . x.");
    }

    @Test
    void namespaceLoopAndTests() {
      String template = "{% set ns = namespace(n=0, seen='') %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
          + "{% set ns.seen = ns.seen + m.role[0] %}{% if loop.last %}{{ loop.index }}/{{ loop.length }}{% endif %}"
          + "{% endfor %} {{ ns.n }} {{ ns.seen }} {{ tools is defined }} {{ missing is defined }}"
          + " {{ messages[0].content is string }} {{ messages[-1].role }} {{ messages[0].content[1:3] }}"
          + " {{ 'tool_calls' in messages[0] }} {{ 'ell' in messages[0].content }} {{ 'abc'[-1] }}{{ 'abc'[9] }}";
      assertThat(render(template, Map.of("tools", List.of())))
          .isEqualTo("2/2 2 ua true false true assistant el false true c");
    }

    @Test
    void specialTokenVariablesAndGenerationPrompt() {
      String template = "{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}";
      assertThat(ChatTemplate.of(template, "<s>", "</s>").render(List.of(), true)).isEqualTo("<s>|</s>|true");
    }
  }
}
