package io.moemesh.gateway;

import static io.moemesh.gateway.Api.chat;
import static io.moemesh.gateway.Api.completion;
import static io.moemesh.gateway.Api.events;
import static io.moemesh.gateway.Api.newId;
import static io.moemesh.gateway.Api.post;
import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.nullValue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.Status;
import io.moemesh.proto.decode.v1.GenerateRequest;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Every client mistake is a 4xx in OpenAI's error shape; backend trouble is 502/503 or an error event. */
@QuarkusTest
@WithTestResource(TestModel.class)
class ErrorsTest {
  @jakarta.inject.Inject ServedModel model;

  @BeforeEach
  void ready() {
    FakeMesh.loadUnavailable = false;
    Api.awaitReady();
  }

  @Test
  void malformedJsonIs400WithoutParam() {
    given().contentType(ContentType.JSON).body("{\"model\": ").post("/v1/chat/completions").then().statusCode(400)
        .body("error.type", equalTo("invalid_request_error")).body("error.param", nullValue())
        .body("error.message", containsString("could not parse the JSON body"));
    given().contentType(ContentType.JSON).body("[1, 2]").post("/v1/completions").then().statusCode(400)
        .body("error.type", equalTo("invalid_request_error"));
  }

  @Test
  void trailingDataAfterTheJsonIs400() {
    given().contentType(ContentType.JSON).body(chat("hi").toString() + " {\"more\": 1}").post("/v1/chat/completions")
        .then().statusCode(400).body("error.type", equalTo("invalid_request_error"))
        .body("error.message", containsString("could not parse the JSON body"));
  }

  /** Parameters that would change the answer but are not implemented are a 400 naming them, not a silent 200. */
  @Test
  void unimplementedParametersAre400() {
    ObjectNode tools = chat("hi");
    tools.putArray("tools").addObject().put("type", "function").putObject("function").put("name", "f");
    expect400(tools, "tools", "not supported");
    expect400(chat("hi").put("tool_choice", "required"), "tool_choice", "not supported");
    ObjectNode format = chat("hi");
    format.putObject("response_format").put("type", "json_object");
    expect400(format, "response_format", "not supported");
    ObjectNode text = chat("hi").put("max_tokens", 2);
    text.putObject("response_format").put("type", "text");
    post("/v1/chat/completions", null, text).then().statusCode(200);
  }

  @Test
  void aBadLogitBiasIs400NamingIt() {
    ObjectNode outside = chat("hi");
    outside.putObject("logit_bias").put(String.valueOf(model.tokenizer().vocabSize()), 5);
    expect400(outside, "logit_bias", "outside the vocabulary");
    ObjectNode tooBig = chat("hi");
    tooBig.putObject("logit_bias").put("42", 101);
    expect400(tooBig, "logit_bias", "[-100, 100]");
    ObjectNode notAnId = chat("hi");
    notAnId.putObject("logit_bias").put("fox", 1);
    expect400(notAnId, "logit_bias", "token ids");
    expect400(chat("hi").put("logit_bias", "strong"), "logit_bias", "an object");
  }

  @Test
  void unknownPathsAndWrongMethodsAnswerInOpenAiShape() {
    given().get("/v1/nothing-here").then().statusCode(404).contentType(ContentType.JSON)
        .body("error.type", equalTo("invalid_request_error")).body("error.code", equalTo("not_found"));
    given().get("/not/an/api").then().statusCode(404).body("error.code", equalTo("not_found"));
    given().get("/v1/chat/completions").then().statusCode(405).contentType(ContentType.JSON)
        .body("error.code", equalTo("method_not_allowed"));
    given().delete("/v1/models").then().statusCode(405).body("error.code", equalTo("method_not_allowed"));
  }

  @Test
  void oversizedBodyIs413InOpenAiShape() {
    given().contentType(ContentType.JSON).body(chat("x".repeat(5 * 1024 * 1024)).toString())
        .post("/v1/chat/completions").then().statusCode(413).body("error.type", equalTo("invalid_request_error"));
  }

  /** /tokenize and /detokenize share the gateway's body limit and its error shape. */
  @Test
  void oversizedBodyOnTheServerRoutesIs413InOpenAiShape() {
    given().contentType(ContentType.JSON).body("{\"prompt\": \"" + "x".repeat(5 * 1024 * 1024) + "\"}").post("/tokenize")
        .then().statusCode(413).contentType(ContentType.JSON).body("error.type", equalTo("invalid_request_error"));
  }

  /** A form body the body handler cannot decode, or an Expect it cannot meet, is the client's 4xx, not a 500. */
  @Test
  void bodiesTheBodyHandlerRefusesAre4xxInOpenAiShape() {
    for (String path : List.of("/v1/completions", "/tokenize")) {
      given().contentType("application/x-www-form-urlencoded").body("prompt=%zz&model=%").post(path).then()
          .statusCode(400).contentType(ContentType.JSON).body("error.type", equalTo("invalid_request_error"))
          .body("error.message", containsString("could not read your request"));
    }
    given().contentType(ContentType.JSON).header("Expect", "something-else").body(completion("hi").toString())
        .post("/v1/completions").then().statusCode(417).contentType(ContentType.JSON)
        .body("error.type", equalTo("invalid_request_error"));
  }

  /** A request target that is no URI is a 400 in OpenAI's shape, not Quarkus' empty one. */
  @Test
  void requestTargetsThatAreNoUriAre400InOpenAiShape() throws Exception {
    for (String target : List.of("/v1/%zz", "/v1/models?q=%", "/v1/models%")) {
      try (var socket = new java.net.Socket("localhost", io.restassured.RestAssured.port)) {
        socket.setSoTimeout(10_000);
        socket.getOutputStream().write(("GET " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
        String answer = new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertThat(answer).as(target).startsWith("HTTP/1.1 400").contains("application/json").contains("\"invalid_request_error\"");
      }
    }
    given().get("/v1/models").then().statusCode(200);
  }

  /** Over the gateway's limits (moemesh.gateway.max-uri-length, max-header-size), below Netty's, which has no body. */
  @Test
  void longUrisAndLargeHeadersAre414And431InOpenAiShape() {
    given().get("/v1/models/" + "m".repeat(5000)).then().statusCode(414).contentType(ContentType.JSON)
        .body("error.type", equalTo("invalid_request_error")).body("error.message", containsString("at most 4096"));
    given().header("X-Big", "h".repeat(25 * 1024)).get("/v1/models").then().statusCode(431).contentType(ContentType.JSON)
        .body("error.type", equalTo("invalid_request_error")).body("error.message", containsString("at most 20480"));
    given().header("X-Fine", "h".repeat(10 * 1024)).get("/v1/models").then().statusCode(200);
  }

  @Test
  void wrongTypesNameTheField() {
    expect400(chat("hi").put("temperature", "hot"), "temperature", "expected a number");
    expect400(chat("hi").put("max_tokens", 1.5), "max_tokens", "expected an integer");
    expect400(chat("hi").put("stream", "yes"), "stream", "expected a boolean");
    expect400(chat("hi").put("stop", 5), "stop", "a string or an array of strings");
    expect400(chat("hi").put("model", 3), "model", "expected a string");
  }

  @Test
  void outOfRangeSamplingUsesTheModelsMessages() {
    expect400(chat("hi").put("temperature", 2.5), "temperature", "temperature must be in [0, 2] (0 = greedy), got 2.5");
    expect400(chat("hi").put("top_p", 1.5), "top_p", "top_p must be in (0, 1], got 1.5");
    expect400(chat("hi").put("presence_penalty", -3), "presence_penalty", "presence_penalty must be in [-2, 2], got -3.0");
    expect400(chat("hi").put("frequency_penalty", 9), "frequency_penalty", "frequency_penalty must be in [-2, 2]");
    expect400(chat("hi").put("logprobs", true).put("top_logprobs", 21), "top_logprobs", "top_logprobs must be in [0, 20]");
    expect400Completion(completion("x").put("logprobs", 30), "logprobs", "logprobs must be in [0, 20] or absent, got 30");
    expect400(chat("hi").put("max_tokens", 0), "max_tokens", "max_tokens must be at least 1");
    expect400(chat("hi").put("n", 0), "n", "n must be in [1, 16], got 0");
    ObjectNode options = chat("hi");
    options.putObject("stream_options").put("include_usage", true);
    expect400(options, "stream_options", "only allowed when 'stream' is enabled");
  }

  @Test
  void badMessagesAre400() {
    ObjectNode empty = chat("x");
    empty.putArray("messages");
    expect400(empty, "messages", "at least one message");
    ObjectNode wizard = chat("x");
    wizard.withArray("messages").addObject().put("role", "wizard").put("content", "abracadabra");
    expect400(wizard, "messages[1].role", "Invalid value: 'wizard'");
    ObjectNode image = chat("x");
    image.withArray("messages").addObject().put("role", "user").putArray("content").addObject().put("type", "image_url");
    expect400(image, "messages[1].content[0].type", "Only text content parts are supported");
    ObjectNode missing = Api.JSON.createObjectNode().put("model", TestModel.SERVED_NAME);
    expect400(missing, "messages", "messages");
    expect400Completion(Api.JSON.createObjectNode().put("model", TestModel.SERVED_NAME), "prompt", "prompt");
  }

  @Test
  void promptPlusMaxTokensOverTheContextSaysTheNumbers() {
    String id = newId("too-long");
    post("/v1/completions", id, completion("Hello").put("max_tokens", TestModel.CONTEXT)).then().statusCode(400)
        .body("error.param", equalTo("prompt")).body("error.code", equalTo("context_length_exceeded"))
        .body("error.message", containsString("maximum context length is " + TestModel.CONTEXT + " tokens"))
        .body("error.message", containsString(TestModel.CONTEXT + " in the completion"));
    String longText = "word ".repeat(600);
    post("/v1/chat/completions", id, chat(longText)).then().statusCode(400)
        .body("error.param", equalTo("messages")).body("error.code", equalTo("context_length_exceeded"));
    assertThat(FakeMesh.calls(id)).isEmpty();
  }

  @Test
  void unknownModelIs404() {
    post("/v1/chat/completions", null, chat("hi").put("model", "gpt-4o")).then().statusCode(404)
        .body("error.code", equalTo("model_not_found")).body("error.param", equalTo("model"))
        .body("error.message", containsString("gpt-4o"));
  }

  @Test
  void backendErrorMidStreamEndsWithAnErrorEvent() {
    String id = newId("mid-stream-error");
    FakeMesh.script(id, FakeMesh.Script.says("this will break after a few tokens").errorAfter(3));
    List<JsonNode> events = events(post("/v1/chat/completions", id, chat("hi").put("stream", true))
        .then().statusCode(200).extract().asString());
    JsonNode last = events.getLast();
    assertThat(last.path("error").path("message").asText()).contains("fake decode failure");
    assertThat(last.path("error").path("type").asText()).isEqualTo("server_error");
    assertThat(events).noneMatch(e -> e.asText().equals("[DONE]"));
    assertThat(Api.streamedText(events, 0)).isNotEmpty();
  }

  @Test
  void backendFailureBeforeAnswerIsAnHttpError() {
    String id = newId("decode-down");
    FakeMesh.script(id, FakeMesh.Script.says("x y z").failing(Status.INTERNAL.withDescription("kaput")));
    post("/v1/completions", id, completion("hi")).then().statusCode(502)
        .body("error.type", equalTo("server_error")).body("error.message", containsString("kaput"));
    String busy = newId("decode-busy");
    FakeMesh.script(busy, FakeMesh.Script.says("x y z").failing(Status.RESOURCE_EXHAUSTED.withDescription("no KV room")));
    post("/v1/completions", busy, completion("hi")).then().statusCode(429)
        .header("Retry-After", equalTo("1")).body("error.message", containsString("no KV room"));
  }

  @Test
  void decodeUnavailableBeforeAnyTokenIsRetriedOnAnotherReplicaWithTheSameTicket() {
    String id = newId("decode-failover");
    FakeMesh.script(id, FakeMesh.Script.says("made it anyway").unavailableFor(1));
    post("/v1/chat/completions", id, chat("hi")).then().statusCode(200)
        .body("choices[0].message.content", equalTo("made it anyway"));
    List<FakeMesh.Call> decodes = FakeMesh.calls(id, "decode");
    assertThat(decodes).hasSize(2);
    String rpcId = ((GenerateRequest) decodes.getFirst().request()).getRequestId();
    assertThat(decodes).extracting(c -> ((GenerateRequest) c.request()).getTicket())
        .allMatch(t -> t.getObjectKey().equals(FakePrefill.ticketKey(rpcId)));
    assertThat(FakeMesh.calls(id, "prefill")).hasSize(1);
  }

  @Test
  void decodeUnavailableEverywhereIs503() {
    String id = newId("decode-gone");
    FakeMesh.script(id, FakeMesh.Script.says("never").unavailableFor(99));
    post("/v1/completions", id, completion("hi")).then().statusCode(503).header("Retry-After", equalTo("1"))
        .body("error.type", equalTo("server_error"));
    // each of the two replicas once (a poll may bring one back in between for a third try), then none is left
    assertThat(FakeMesh.calls(id, "decode")).hasSizeBetween(2, 3);
  }

  @Test
  void unreachableReplicasGive503WithRetryAfterAndNotReady() {
    FakeMesh.loadUnavailable = true;
    try {
      await().atMost(Duration.ofSeconds(5)).until(() -> given().get("/q/health/ready").statusCode() == 503);
      post("/v1/chat/completions", null, chat("hi")).then().statusCode(503)
          .header("Retry-After", equalTo("1")).body("error.code", equalTo("service_unavailable"));
    } finally {
      FakeMesh.loadUnavailable = false;
    }
    Api.awaitReady();
  }

  /** Every decode replica reports its KV cache nearly full: a fast 429 with Retry-After, not a 503 or a silent wait. */
  @Test
  void withNoDecodeReplicaHavingKvRoomANewRequestIs429WithRetryAfterAndServedOnceThereIsRoom() {
    FakeMesh.decodeKvUsage = 0.97;
    try {
      await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(100))
          .until(() -> post("/v1/chat/completions", null, chat("hi")).statusCode() == 429);
      post("/v1/chat/completions", null, chat("hi")).then().statusCode(429).header("Retry-After", equalTo("1"))
          .body("error.type", equalTo("rate_limit_error"))
          .body("error.message", containsString("out of KV cache room")).body("error.message", containsString("97%"));
      post("/v1/completions", null, completion("hi")).then().statusCode(429);
      given().get("/q/health/ready").then().statusCode(200); // full is busy, not down
    } finally {
      FakeMesh.decodeKvUsage = 0.1;
    }
    await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(100))
        .until(() -> post("/v1/chat/completions", null, chat("hi")).statusCode() == 200);
  }

  private static void expect400(ObjectNode body, String param, String message) {
    post("/v1/chat/completions", null, body).then().statusCode(400)
        .body("error.type", equalTo("invalid_request_error")).body("error.param", equalTo(param))
        .body("error.message", containsString(message));
  }

  private static void expect400Completion(ObjectNode body, String param, String message) {
    post("/v1/completions", null, body).then().statusCode(400)
        .body("error.type", equalTo("invalid_request_error")).body("error.param", equalTo(param))
        .body("error.message", containsString(message));
  }
}
