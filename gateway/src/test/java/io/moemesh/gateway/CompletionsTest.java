package io.moemesh.gateway;

import static io.moemesh.gateway.Api.completion;
import static io.moemesh.gateway.Api.events;
import static io.moemesh.gateway.Api.newId;
import static io.moemesh.gateway.Api.post;
import static io.moemesh.gateway.Api.streamedText;
import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.equalTo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moemesh.proto.decode.v1.GenerateRequest;
import io.moemesh.proto.prefill.v1.PrefillRequest;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** /v1/completions and /v1/models over real HTTP against the fake replicas. */
@QuarkusTest
@WithTestResource(TestModel.class)
class CompletionsTest {
  static final String TEXT = " and they lived happily ever after.";

  @Inject ServedModel model;

  @BeforeEach
  void ready() {
    Api.awaitReady();
  }

  @Test
  void nonStreamingCompletion() {
    String id = newId("cmpl-plain");
    FakeMesh.script(id, FakeMesh.Script.says(TEXT));
    JsonNode body = Api.parse(post("/v1/completions", id, completion("Once upon a time"))
        .then().statusCode(200).header("X-Request-Id", id).extract().asString());

    assertThat(body.path("object").asText()).isEqualTo("text_completion");
    assertThat(body.path("id").asText()).startsWith("cmpl-").isNotEqualTo(id);
    JsonNode choice = body.path("choices").get(0);
    assertThat(choice.path("text").asText()).isEqualTo(TEXT);
    assertThat(choice.path("index").asInt()).isZero();
    assertThat(choice.path("finish_reason").asText()).isEqualTo("stop");
    assertThat(choice.path("logprobs").isNull()).isTrue();
    int[] prompt = model.tokenizer().encode("Once upon a time", true);
    assertThat(prompt[0]).as("BOS added").isEqualTo(model.tokenizer().bosId());
    assertThat(body.path("usage").path("prompt_tokens").asInt()).isEqualTo(prompt.length);
    var prefill = (PrefillRequest) FakeMesh.calls(id, "prefill").getFirst().request();
    assertThat(prefill.getPromptTokenIdsList()).containsExactlyElementsOf(Arrays.stream(prompt).boxed().toList());
  }

  @Test
  void streamingCompletionChunksAndUsage() {
    String id = newId("cmpl-stream");
    FakeMesh.script(id, FakeMesh.Script.says(TEXT));
    ObjectNode request = completion("Once upon a time").put("stream", true);
    request.putObject("stream_options").put("include_usage", true);
    List<JsonNode> events = events(post("/v1/completions", id, request).then().statusCode(200).extract().asString());

    assertThat(events.getLast().asText()).isEqualTo("[DONE]");
    JsonNode usageChunk = events.get(events.size() - 2);
    assertThat(usageChunk.path("object").asText()).isEqualTo("text_completion");
    assertThat(usageChunk.path("choices").isEmpty()).isTrue();
    assertThat(usageChunk.path("usage").path("completion_tokens").asInt())
        .isEqualTo(model.tokenizer().encode(TEXT).length + 1);
    List<JsonNode> chunks = events.subList(0, events.size() - 2);
    assertThat(chunks).allSatisfy(c -> {
      assertThat(c.path("object").asText()).isEqualTo("text_completion");
      assertThat(c.path("choices").get(0).has("text")).isTrue();
    });
    assertThat(streamedText(chunks, 0)).isEqualTo(TEXT);
    assertThat(chunks.getLast().path("choices").get(0).path("finish_reason").asText()).isEqualTo("stop");
  }

  @Test
  void logprobsInCompletionsShape() {
    String id = newId("cmpl-logprobs");
    FakeMesh.script(id, FakeMesh.Script.says(TEXT));
    JsonNode lp = Api.parse(post("/v1/completions", id, completion("Once").put("logprobs", 3))
        .then().statusCode(200).extract().asString()).path("choices").get(0).path("logprobs");

    int[] ids = model.tokenizer().encode(TEXT);
    assertThat(lp.path("tokens")).hasSize(ids.length + 1);
    assertThat(lp.path("token_logprobs")).hasSize(ids.length + 1);
    assertThat(lp.path("top_logprobs")).hasSize(ids.length + 1);
    int offset = 0;
    for (int i = 0; i < ids.length; i++) {
      String token = model.tokenizer().decode(new int[] {ids[i]}, false);
      assertThat(lp.path("tokens").get(i).asText()).isEqualTo(token);
      assertThat(lp.path("token_logprobs").get(i).asDouble()).isEqualTo(FakeMesh.logprob(i, 0));
      assertThat(lp.path("top_logprobs").get(i).size()).isBetween(1, 3); // alternatives may share a token text
      assertThat(lp.path("top_logprobs").get(i).path(token).asDouble()).isEqualTo(FakeMesh.logprob(i, 0));
      assertThat(lp.path("text_offset").get(i).asInt()).isEqualTo(offset);
      offset += token.length();
    }
  }

  @Test
  void promptAsTokenIdsAndSeveralPromptsGiveOneChoiceEach() {
    String id = newId("cmpl-batch");
    FakeMesh.script(id, FakeMesh.Script.says(TEXT));
    ObjectNode request = completion("unused");
    request.putArray("prompt").add("First prompt").add("Second prompt");
    JsonNode body = Api.parse(post("/v1/completions", id, request.put("n", 2)).then().statusCode(200).extract().asString());
    assertThat(body.path("choices")).hasSize(4);
    for (int i = 0; i < 4; i++) {
      assertThat(body.path("choices").get(i).path("index").asInt()).isEqualTo(i);
      assertThat(body.path("choices").get(i).path("text").asText()).isEqualTo(TEXT);
    }
    int prompts = model.tokenizer().encode("First prompt", true).length + model.tokenizer().encode("Second prompt", true).length;
    assertThat(body.path("usage").path("prompt_tokens").asInt()).isEqualTo(prompts);

    String tokensId = newId("cmpl-ids");
    FakeMesh.script(tokensId, FakeMesh.Script.says(TEXT));
    ObjectNode byIds = completion("unused");
    byIds.putArray("prompt").add(0).add(300).add(301);
    post("/v1/completions", tokensId, byIds).then().statusCode(200).body("choices[0].text", equalTo(TEXT));
    var prefill = (PrefillRequest) FakeMesh.calls(tokensId, "prefill").getFirst().request();
    assertThat(prefill.getPromptTokenIdsList()).containsExactly(0, 300, 301);
  }

  /** vLLM's extension that benchmarks use (bench serve): both legs generate past EOS; off unless asked. */
  @Test
  void ignoreEosReachesBothLegs() {
    String id = newId("cmpl-ignore-eos");
    FakeMesh.script(id, FakeMesh.Script.says(TEXT));
    ObjectNode request = completion("unused").put("ignore_eos", true).put("max_tokens", 4);
    request.putArray("prompt").add(300).add(301);
    post("/v1/completions", id, request).then().statusCode(200).body("usage.completion_tokens", equalTo(4));
    var prefill = (PrefillRequest) FakeMesh.calls(id, "prefill").getFirst().request();
    var decode = (GenerateRequest) FakeMesh.calls(id, "decode").getFirst().request();
    assertThat(prefill.getSampling().getIgnoreEos()).isTrue();
    assertThat(decode.getSampling().getIgnoreEos()).isTrue();

    String plain = newId("cmpl-eos");
    FakeMesh.script(plain, FakeMesh.Script.says(TEXT));
    post("/v1/completions", plain, completion("x")).then().statusCode(200);
    assertThat(((PrefillRequest) FakeMesh.calls(plain, "prefill").getFirst().request()).getSampling().getIgnoreEos()).isFalse();
  }

  @Test
  void generatedIdHasTheCompletionPrefix() {
    String id = post("/v1/completions", null, completion("x")).then().statusCode(200).extract().header("X-Request-Id");
    assertThat(id).startsWith("cmpl-");
  }

  @Test
  void modelsListTheServedModel() {
    given().get("/v1/models").then().statusCode(200)
        .body("object", equalTo("list"))
        .body("data[0].id", equalTo(TestModel.SERVED_NAME))
        .body("data[0].object", equalTo("model"))
        .body("data[0].max_model_len", equalTo(TestModel.CONTEXT));
    given().get("/v1/models/" + TestModel.SERVED_NAME).then().statusCode(200).body("id", equalTo(TestModel.SERVED_NAME));
    given().get("/v1/models/gpt-4").then().statusCode(404).body("error.code", equalTo("model_not_found"));
  }

  @Test
  void theDirectoryNameIsAcceptedAsModel() {
    String id = newId("cmpl-dirname");
    post("/v1/completions", id, completion("x").put("model", TestModel.DIR_NAME)).then().statusCode(200)
        .body("model", equalTo(TestModel.SERVED_NAME));
  }
}
