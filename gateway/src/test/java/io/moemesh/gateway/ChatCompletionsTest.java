package io.moemesh.gateway;

import static io.moemesh.gateway.Api.chat;
import static io.moemesh.gateway.Api.events;
import static io.moemesh.gateway.Api.newId;
import static io.moemesh.gateway.Api.post;
import static io.moemesh.gateway.Api.streamedText;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moemesh.proto.decode.v1.GenerateRequest;
import io.moemesh.proto.prefill.v1.PrefillRequest;
import io.moemesh.tokenizer.ChatMessage;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** /v1/chat/completions over real HTTP against the fake prefill and decode replicas (disaggregated mode). */
@QuarkusTest
@WithTestResource(TestModel.class)
class ChatCompletionsTest {
  static final String TEXT = "The quick brown fox jumps over the lazy dog.";

  @Inject ServedModel model;

  @BeforeEach
  void ready() {
    Api.awaitReady();
  }

  @Test
  void nonStreamingAnswerIsTheDecodedTextWithUsage() {
    String id = newId("chat-plain");
    FakeMesh.script(id, FakeMesh.Script.says(TEXT).cached(3));
    JsonNode body = Api.parse(post("/v1/chat/completions", id, chat("Tell me about foxes."))
        .then().statusCode(200).header("X-Request-Id", id).header("Content-Type", "application/json")
        .extract().asString());

    assertThat(body.path("id").asText()).as("the mesh's own id, not the client's").startsWith("chatcmpl-").isNotEqualTo(id);
    assertThat(body.path("object").asText()).isEqualTo("chat.completion");
    assertThat(body.path("model").asText()).isEqualTo(TestModel.SERVED_NAME);
    JsonNode choice = body.path("choices").get(0);
    assertThat(choice.path("index").asInt()).isZero();
    assertThat(choice.path("message").path("role").asText()).isEqualTo("assistant");
    assertThat(choice.path("message").path("content").asText()).isEqualTo(TEXT);
    assertThat(choice.path("finish_reason").asText()).isEqualTo("stop");
    assertThat(choice.path("logprobs").isNull()).isTrue();

    int[] prompt = model.tokenizer().encode(model.chatTemplate().orElseThrow()
        .render(List.of(ChatMessage.user("Tell me about foxes.")), true));
    int completion = model.tokenizer().encode(TEXT).length + 1; // the text's tokens and EOS
    JsonNode usage = body.path("usage");
    assertThat(usage.path("prompt_tokens").asInt()).isEqualTo(prompt.length);
    assertThat(usage.path("completion_tokens").asInt()).isEqualTo(completion);
    assertThat(usage.path("total_tokens").asInt()).isEqualTo(prompt.length + completion);
    assertThat(usage.path("prompt_tokens_details").path("cached_tokens").asInt()).isEqualTo(3);

    var prefill = (PrefillRequest) FakeMesh.calls(id, "prefill").getFirst().request();
    assertThat(prefill.getPromptTokenIdsList()).containsExactlyElementsOf(Arrays.stream(prompt).boxed().toList());
  }

  @Test
  void disaggregatedPathSendsTicketAndFirstTokenToDecode() {
    String id = newId("chat-pd");
    FakeMesh.script(id, FakeMesh.Script.says(TEXT));
    String responseId = Api.parse(post("/v1/chat/completions", id, chat("hi").put("max_tokens", 50)).then()
        .statusCode(200).header("X-Request-Id", id).extract().asString()).path("id").asText();

    List<FakeMesh.Call> calls = FakeMesh.calls(id);
    assertThat(calls).extracting(FakeMesh.Call::service).containsExactly("prefill", "decode");
    var prefill = (PrefillRequest) calls.get(0).request();
    var decode = (GenerateRequest) calls.get(1).request();
    // the client's id correlates (header, metadata); the mesh's own id keys the RPCs and the KV object
    assertThat(responseId).startsWith("chatcmpl-").isNotEqualTo(id);
    assertThat(prefill.getRequestId()).isEqualTo(responseId);
    assertThat(decode.getRequestId()).isEqualTo(responseId);
    assertThat(decode.hasTicket()).isTrue();
    assertThat(decode.getTicket().getObjectKey()).isEqualTo(FakePrefill.ticketKey(responseId));
    assertThat(decode.getFirstToken().getTokenId()).isEqualTo(model.tokenizer().encode(TEXT)[0]);
    assertThat(decode.getSampledDraws()).isEqualTo(1);
    assertThat(decode.getMaxTokens()).isEqualTo(50);
    assertThat(decode.getPromptTokenIdsList()).isEqualTo(prefill.getPromptTokenIdsList());
    assertThat(calls).noneMatch(c -> c.cancelled().get());
    // deadlines as configured (defaults: prefill 60 s, decode 10 min), minus the time the calls took to arrive
    assertThat(calls.get(0).deadline().timeRemaining(TimeUnit.SECONDS)).isBetween(30L, 60L);
    assertThat(calls.get(1).deadline().timeRemaining(TimeUnit.SECONDS)).isBetween(570L, 600L);
  }

  @Test
  void withoutAReachablePrefillReplicaDecodeComputesThePrompt() {
    FakeMesh.prefillLoadUnavailable = true;
    try {
      await().atMost(Duration.ofSeconds(5)).until(() -> readiness().contains("\"prefill@localhost:19101\":\"unreachable\"")
          && readiness().contains("\"prefill@127.0.0.1:19101\":\"unreachable\""));
      String id = newId("chat-no-prefill");
      FakeMesh.script(id, FakeMesh.Script.says(TEXT));
      post("/v1/chat/completions", id, chat("hi")).then().statusCode(200);
      assertThat(FakeMesh.calls(id)).extracting(FakeMesh.Call::service).containsExactly("decode");
      assertThat(((GenerateRequest) FakeMesh.calls(id).getFirst().request()).hasTicket()).isFalse();
    } finally {
      FakeMesh.prefillLoadUnavailable = false;
    }
  }

  private static String readiness() {
    return io.restassured.RestAssured.given().get("/q/health/ready").then().extract().asString().replace(" ", "");
  }

  @Test
  void streamingSendsRoleThenContentThenFinishThenDone() {
    String id = newId("chat-stream");
    FakeMesh.script(id, FakeMesh.Script.says(TEXT));
    String raw = post("/v1/chat/completions", id, chat("hi").put("stream", true))
        .then().statusCode(200).header("X-Request-Id", id).header("Content-Type", "text/event-stream")
        .extract().asString();
    List<JsonNode> events = events(raw);

    assertThat(events.getLast().asText()).isEqualTo("[DONE]");
    List<JsonNode> chunks = events.subList(0, events.size() - 1);
    String responseId = chunks.getFirst().path("id").asText();
    assertThat(responseId).startsWith("chatcmpl-").isNotEqualTo(id);
    assertThat(chunks).allSatisfy(c -> {
      assertThat(c.path("object").asText()).isEqualTo("chat.completion.chunk");
      assertThat(c.path("id").asText()).isEqualTo(responseId);
      assertThat(c.has("usage")).isFalse();
    });
    JsonNode first = chunks.getFirst().path("choices").get(0);
    assertThat(first.path("delta").path("role").asText()).isEqualTo("assistant");
    assertThat(first.path("finish_reason").isNull()).isTrue();
    assertThat(chunks.subList(1, chunks.size())).allSatisfy(c -> assertThat(c.path("choices").get(0).path("delta")
        .has("role")).isFalse());
    JsonNode last = chunks.getLast().path("choices").get(0);
    assertThat(last.path("finish_reason").asText()).isEqualTo("stop");
    assertThat(last.path("delta").isEmpty()).isTrue();
    assertThat(streamedText(chunks, 0)).isEqualTo(TEXT);
    assertThat(chunks.size()).as("content arrives token by token").isGreaterThan(5);
  }

  @Test
  void includeUsageAddsAFinalUsageChunkAndNullUsageBefore() {
    String id = newId("chat-usage");
    FakeMesh.script(id, FakeMesh.Script.says(TEXT));
    ObjectNode body = chat("hi").put("stream", true);
    body.putObject("stream_options").put("include_usage", true);
    List<JsonNode> events = events(post("/v1/chat/completions", id, body).then().statusCode(200).extract().asString());

    JsonNode usageChunk = events.get(events.size() - 2);
    assertThat(usageChunk.path("choices").isEmpty()).isTrue();
    assertThat(usageChunk.path("usage").path("completion_tokens").asInt())
        .isEqualTo(model.tokenizer().encode(TEXT).length + 1);
    assertThat(usageChunk.path("usage").path("total_tokens").asInt()).isEqualTo(
        usageChunk.path("usage").path("prompt_tokens").asInt() + usageChunk.path("usage").path("completion_tokens").asInt());
    assertThat(events.subList(0, events.size() - 2)).allSatisfy(c -> {
      assertThat(c.has("usage")).isTrue();
      assertThat(c.path("usage").isNull()).isTrue();
    });
  }

  @Test
  void streamingSeveralChoicesKeepsEachChoiceInOrderUnderItsIndex() {
    String id = newId("chat-stream-n");
    FakeMesh.script(id, FakeMesh.Script.says(TEXT));
    ObjectNode body = chat("hi").put("stream", true).put("n", 3);
    body.putObject("stream_options").put("include_usage", true);
    List<JsonNode> events = events(post("/v1/chat/completions", id, body).then().statusCode(200).extract().asString());

    List<JsonNode> chunks = events.subList(0, events.size() - 2);
    for (int index = 0; index < 3; index++) {
      int i = index;
      List<JsonNode> mine = chunks.stream().map(c -> c.path("choices").get(0))
          .filter(c -> c.path("index").asInt() == i).toList();
      assertThat(mine.getFirst().path("delta").path("role").asText()).isEqualTo("assistant");
      assertThat(mine.stream().filter(c -> !c.path("finish_reason").isNull()).toList()).singleElement()
          .isEqualTo(mine.getLast());
      assertThat(streamedText(chunks, i)).isEqualTo(TEXT);
    }
    assertThat(events.get(events.size() - 2).path("usage").path("completion_tokens").asInt())
        .isEqualTo(3 * (model.tokenizer().encode(TEXT).length + 1));
  }

  @Test
  void maxTokensEndsWithLength() {
    String id = newId("chat-length");
    FakeMesh.script(id, FakeMesh.Script.says(TEXT));
    JsonNode body = Api.parse(post("/v1/chat/completions", id, chat("hi").put("max_completion_tokens", 3))
        .then().statusCode(200).extract().asString());
    int[] ids = model.tokenizer().encode(TEXT);
    assertThat(body.path("choices").get(0).path("message").path("content").asText())
        .isEqualTo(model.tokenizer().decode(Arrays.copyOf(ids, 3), true));
    assertThat(body.path("choices").get(0).path("finish_reason").asText()).isEqualTo("length");
    assertThat(body.path("usage").path("completion_tokens").asInt()).isEqualTo(3);
  }

  @Test
  void maxTokensOfOneNeedsNoDecodeCall() {
    String id = newId("chat-one");
    FakeMesh.script(id, FakeMesh.Script.says(TEXT));
    JsonNode body = Api.parse(post("/v1/chat/completions", id, chat("hi").put("max_tokens", 1))
        .then().statusCode(200).extract().asString());
    assertThat(body.path("choices").get(0).path("finish_reason").asText()).isEqualTo("length");
    assertThat(body.path("usage").path("completion_tokens").asInt()).isEqualTo(1);
    assertThat(FakeMesh.calls(id)).extracting(FakeMesh.Call::service).containsExactly("prefill");
  }

  @Test
  void stopStringSplitAcrossTokensIsCutAndNeverLeaks() {
    String text = "Hello world. Stop right here, please and thank you.";
    String stop = "right here";
    int[] ids = model.tokenizer().encode(text);
    assertThat(Arrays.stream(ids).mapToObj(t -> model.tokenizer().decode(new int[] {t}, false)))
        .as("precondition: the stop string spans several tokens").noneMatch(piece -> piece.contains(stop));
    String id = newId("chat-stop");
    FakeMesh.script(id, FakeMesh.Script.says(text).hanging()); // decode would never end by itself
    ObjectNode body = chat("hi").put("stream", true);
    body.putArray("stop").add("never appears").add(stop);
    List<JsonNode> events = events(post("/v1/chat/completions", id, body).then().statusCode(200).extract().asString());

    assertThat(streamedText(events, 0)).isEqualTo("Hello world. Stop ");
    assertThat(events).noneMatch(e -> e.toString().contains("right"));
    assertThat(events.get(events.size() - 2).path("choices").get(0).path("finish_reason").asText()).isEqualTo("stop");
    await().atMost(Duration.ofSeconds(5)).until(() -> FakeMesh.calls(id, "decode").getFirst().cancelled().get());
  }

  @Test
  void stopStringInNonStreamingAnswer() {
    String id = newId("chat-stop-json");
    FakeMesh.script(id, FakeMesh.Script.says("one two three four"));
    JsonNode body = Api.parse(post("/v1/chat/completions", id, chat("count").put("stop", " three"))
        .then().statusCode(200).extract().asString());
    assertThat(body.path("choices").get(0).path("message").path("content").asText()).isEqualTo("one two");
    assertThat(body.path("choices").get(0).path("finish_reason").asText()).isEqualTo("stop");
  }

  @Test
  void nChoicesRunAsSeparateRequestsWithTheirOwnIndexAndSeed() {
    String id = newId("chat-n");
    FakeMesh.script(id, FakeMesh.Script.says(TEXT));
    JsonNode body = Api.parse(post("/v1/chat/completions", id, chat("hi").put("n", 2).put("seed", 7)
        .put("temperature", 0.8).put("top_p", 0.9).put("presence_penalty", 0.5).put("frequency_penalty", -0.5)
        .put("user", "alice").set("logit_bias", Api.parse("{\"5\": -100, \"17\": 2.5}"))).then().statusCode(200)
        .extract().asString());

    assertThat(body.path("choices")).hasSize(2);
    assertThat(body.path("choices").get(0).path("index").asInt()).isZero();
    assertThat(body.path("choices").get(1).path("index").asInt()).isEqualTo(1);
    for (JsonNode c : body.path("choices")) assertThat(c.path("message").path("content").asText()).isEqualTo(TEXT);
    assertThat(body.path("usage").path("completion_tokens").asInt())
        .isEqualTo(2 * (model.tokenizer().encode(TEXT).length + 1));

    List<PrefillRequest> prefills = FakeMesh.calls(id, "prefill").stream()
        .map(c -> (PrefillRequest) c.request()).toList();
    String responseId = body.path("id").asText();
    assertThat(prefills).extracting(PrefillRequest::getRequestId)
        .containsExactlyInAnyOrder(responseId + "-0", responseId + "-1");
    assertThat(prefills).extracting(p -> p.getSampling().getSeed()).containsExactlyInAnyOrder(7L, 8L);
    assertThat(prefills).allSatisfy(p -> {
      assertThat(p.getSampling().getTemperature()).isEqualTo(0.8);
      assertThat(p.getSampling().getLogitBiasMap()).containsOnly(java.util.Map.entry(5, -100f), java.util.Map.entry(17, 2.5f));
      assertThat(p.getSampling().getTopP()).isEqualTo(0.9);
      assertThat(p.getSampling().getPresencePenalty()).isEqualTo(0.5);
      assertThat(p.getSampling().getFrequencyPenalty()).isEqualTo(-0.5);
    });
  }

  @Test
  void logprobsInChatShape() {
    String id = newId("chat-logprobs");
    FakeMesh.script(id, FakeMesh.Script.says(TEXT));
    JsonNode body = Api.parse(post("/v1/chat/completions", id, chat("hi").put("logprobs", true).put("top_logprobs", 2))
        .then().statusCode(200).extract().asString());

    JsonNode content = body.path("choices").get(0).path("logprobs").path("content");
    int[] ids = model.tokenizer().encode(TEXT);
    assertThat(content).hasSize(ids.length + 1);
    StringBuilder joined = new StringBuilder();
    for (int i = 0; i < ids.length; i++) {
      JsonNode entry = content.get(i);
      String token = model.tokenizer().decode(new int[] {ids[i]}, false);
      assertThat(entry.path("token").asText()).isEqualTo(token);
      assertThat(entry.path("logprob").asDouble()).isEqualTo(FakeMesh.logprob(i, 0));
      assertThat(bytes(entry.path("bytes"))).isEqualTo(token.getBytes(StandardCharsets.UTF_8));
      assertThat(entry.path("top_logprobs")).hasSize(2);
      assertThat(entry.path("top_logprobs").get(0).path("token").asText()).isEqualTo(token);
      assertThat(entry.path("top_logprobs").get(1).path("logprob").asDouble()).isEqualTo(FakeMesh.logprob(i, 1));
      joined.append(entry.path("token").asText());
    }
    assertThat(joined.toString()).isEqualTo(TEXT);
    var prefill = (PrefillRequest) FakeMesh.calls(id, "prefill").getFirst().request();
    assertThat(prefill.getSampling().getLogprobs()).isEqualTo(2);
  }

  @Test
  void streamingLogprobsRideWithTheirContent() {
    String id = newId("chat-logprobs-stream");
    FakeMesh.script(id, FakeMesh.Script.says(TEXT));
    List<JsonNode> events = events(post("/v1/chat/completions", id, chat("hi").put("stream", true)
        .put("logprobs", true)).then().statusCode(200).extract().asString());
    int entries = 0;
    for (JsonNode e : events) {
      JsonNode c = e.path("choices").path(0);
      if (c.path("delta").has("content") && !c.path("delta").has("role")) {
        assertThat(c.path("logprobs").path("content").size()).isPositive();
        entries += c.path("logprobs").path("content").size();
      }
    }
    assertThat(entries).isEqualTo(model.tokenizer().encode(TEXT).length + 1);
  }

  @Test
  void generatedRequestIdHasTheChatPrefixAndReachesTheBackends() {
    var response = post("/v1/chat/completions", null, chat("hi")).then().statusCode(200).extract();
    String id = response.header("X-Request-Id");
    assertThat(id).startsWith("chatcmpl-");
    assertThat(Api.parse(response.asString()).path("id").asText()).isEqualTo(id);
    assertThat(FakeMesh.calls(id)).extracting(FakeMesh.Call::service).containsExactly("prefill", "decode");
  }

  @Test
  void everyRpcOfARequestCarriesTheRequestsTraceTheClientsIfValid() {
    String id = newId("trace-new");
    post("/v1/chat/completions", id, chat("hi").put("n", 2)).then().statusCode(200);
    assertThat(FakeMesh.calls(id)).hasSize(4).extracting(FakeMesh.Call::traceParent)
        .allMatch(p -> p != null && p.matches("00-[0-9a-f]{32}-[0-9a-f]{16}-01"))
        .as("one trace, each call its own span").doesNotHaveDuplicates()
        .extracting(p -> p.substring(3, 35)).containsOnly(FakeMesh.calls(id).getFirst().traceParent().substring(3, 35));

    String clients = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    String id2 = newId("trace-client");
    io.restassured.RestAssured.given().contentType("application/json").header("X-Request-Id", id2)
        .header("traceparent", clients).body(chat("hi").toString()).post("/v1/chat/completions").then().statusCode(200);
    assertThat(FakeMesh.calls(id2)).hasSize(2).extracting(FakeMesh.Call::traceParent)
        .allMatch(p -> p.startsWith("00-4bf92f3577b34da6a3ce929d0e0e4736-") && !p.equals(clients));
  }

  @Test
  void anUnsafeRequestIdIsReplaced() {
    var response = post("/v1/chat/completions", "has spaces;and=more", chat("hi")).then().statusCode(200).extract();
    assertThat(response.header("X-Request-Id")).startsWith("chatcmpl-");
  }

  private static byte[] bytes(JsonNode array) {
    byte[] out = new byte[array.size()];
    for (int i = 0; i < out.length; i++) out[i] = (byte) array.get(i).asInt();
    return out;
  }
}
