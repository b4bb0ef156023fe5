package io.moemesh.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.moemesh.gateway.GenerationRequest.Endpoint;
import io.moemesh.gateway.GenerationRequest.Prompt;
import io.moemesh.tokenizer.ChatMessage;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class RequestParserTest {
  private final RequestParser parser = new RequestParser(8);

  private GenerationRequest chat(String json) {
    return parser.parse(Endpoint.CHAT, json.getBytes(StandardCharsets.UTF_8));
  }

  private GenerationRequest completion(String json) {
    return parser.parse(Endpoint.COMPLETION, json.getBytes(StandardCharsets.UTF_8));
  }

  private ApiError chatError(String json) {
    return catchThrowableOfType(ApiError.class, () -> chat(json));
  }

  @Nested
  class Mapping {
    @Test
    void chatDefaultsFollowOpenAi() {
      GenerationRequest r = chat("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
      assertThat(r.messages()).containsExactly(ChatMessage.user("hi"));
      assertThat(r.n()).isEqualTo(1);
      assertThat(r.stream()).isFalse();
      assertThat(r.maxTokens()).isNull();
      assertThat(r.topLogprobs()).isNull();
      assertThat(r.sampling().temperature()).isEqualTo(1.0);
      assertThat(r.sampling().topP()).isEqualTo(1.0);
      assertThat(r.sampling().seed()).isNull();
      assertThat(r.stop()).isEmpty();
    }

    @Test
    void samplingFieldsReachTheModelsParams() {
      GenerationRequest r = chat("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
          + "\"temperature\":0.2,\"top_p\":0.5,\"seed\":42,\"presence_penalty\":1,\"frequency_penalty\":-1,"
          + "\"logprobs\":true,\"top_logprobs\":4,\"stop\":\"x\",\"max_tokens\":9,\"max_completion_tokens\":7,"
          + "\"stream\":true,\"stream_options\":{\"include_usage\":true},\"user\":\"u\"}");
      assertThat(r.sampling().temperature()).isEqualTo(0.2);
      assertThat(r.sampling().topP()).isEqualTo(0.5);
      assertThat(r.sampling().seed()).isEqualTo(42L);
      assertThat(r.sampling().presencePenalty()).isEqualTo(1.0);
      assertThat(r.sampling().frequencyPenalty()).isEqualTo(-1.0);
      assertThat(r.sampling().logprobs()).isEqualTo(4);
      assertThat(r.topLogprobs()).isEqualTo(4);
      assertThat(r.stop()).containsExactly("x");
      assertThat(r.maxTokens()).as("max_completion_tokens wins").isEqualTo(7);
      assertThat(r.includeUsage()).isTrue();
      assertThat(r.user()).isEqualTo("u");
    }

    @Test
    void contentPartsJoinAndDeveloperBecomesSystem() {
      GenerationRequest r = chat("{\"model\":\"m\",\"messages\":[{\"role\":\"developer\",\"content\":"
          + "[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
          + "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
          + "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},{\"role\":\"tool\",\"content\":\"42\","
          + "\"tool_call_id\":\"c1\"}]}");
      assertThat(r.messages().get(0)).isEqualTo(ChatMessage.system("a\nb"));
      assertThat(r.messages().get(1).toolCalls()).containsExactly(new ChatMessage.ToolCall("c1", "f", "{}"));
      assertThat(r.messages().get(2)).isEqualTo(ChatMessage.tool("42", "c1"));
    }

    @Test
    void completionPromptsInEveryShape() {
      assertThat(completion("{\"model\":\"m\",\"prompt\":\"p\"}").prompts()).containsExactly(new Prompt.Text("p"));
      assertThat(completion("{\"model\":\"m\",\"prompt\":[\"a\",\"b\"]}").prompts())
          .containsExactly(new Prompt.Text("a"), new Prompt.Text("b"));
      List<Prompt> ids = completion("{\"model\":\"m\",\"prompt\":[1,2,3],\"logprobs\":2}").prompts();
      assertThat(((Prompt.Tokens) ids.getFirst()).ids()).containsExactly(1, 2, 3);
      List<Prompt> nested = completion("{\"model\":\"m\",\"prompt\":[[1],[2,3]]}").prompts();
      assertThat(nested).hasSize(2);
      assertThat(completion("{\"model\":\"m\",\"prompt\":\"p\",\"logprobs\":2}").topLogprobs()).isEqualTo(2);
    }
  }

  @Nested
  class Validation {
    /** A batch of prompts is as many generations: bounded per request, so it cannot slip past admission. */
    @Test
    void promptsTimesNAreBoundedPerRequest() {
      var bounded = new RequestParser(8, 64);
      String prompts = "[" + "\"x\",".repeat(32) + "\"x\"]"; // 33 prompts
      var e = catchThrowableOfType(ApiError.class, () -> bounded.parse(Endpoint.COMPLETION,
          ("{\"model\":\"m\",\"prompt\":" + prompts + ",\"n\":2}").getBytes(StandardCharsets.UTF_8)));
      assertThat(e.status()).isEqualTo(400);
      assertThat(e.toJson().path("error").path("param").asText()).isEqualTo("prompt");
      assertThat(e.getMessage()).contains("66 generations").contains("at most 64");
      assertThat(bounded.parse(Endpoint.COMPLETION, ("{\"model\":\"m\",\"prompt\":" + prompts + "}")
          .getBytes(StandardCharsets.UTF_8)).prompts()).hasSize(33);
    }

    @Test
    void rangeErrorsCarryTheFieldAndTheModelsMessage() {
      ApiError e = chatError("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"top_p\":0}");
      assertThat(e.status()).isEqualTo(400);
      assertThat(e.toJson().path("error").path("param").asText()).isEqualTo("top_p");
      assertThat(e.getMessage()).isEqualTo("top_p must be in (0, 1], got 0.0");
    }

    @Test
    void typeErrorsNameTheField() {
      ApiError e = chatError("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"seed\":\"s\"}");
      assertThat(e.toJson().path("error").path("param").asText()).isEqualTo("seed");
      assertThat(e.getMessage()).isEqualTo("Invalid type for 'seed': expected an integer, but got a string instead.");
    }

    @Test
    void structuralErrors() {
      assertThat(chatError("not json").toJson().path("error").path("param").isNull()).isTrue();
      assertThat(chatError("{\"messages\":[]}").toJson().path("error").path("param").asText()).isEqualTo("model");
      assertThat(chatError("{\"model\":\"m\",\"messages\":[]}").toJson().path("error").path("param").asText())
          .isEqualTo("messages");
      assertThat(chatError("{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}]}").toJson().path("error")
          .path("param").asText()).isEqualTo("messages[0].content");
      assertThat(chatError("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":9}")
          .getMessage()).isEqualTo("n must be in [1, 8], got 9");
      assertThat(chatError("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
          + "\"top_logprobs\":2}").getMessage()).contains("requires logprobs");
      assertThat(chatError("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":[\"\"]}")
          .toJson().path("error").path("param").asText()).isEqualTo("stop");
    }
  }
}
