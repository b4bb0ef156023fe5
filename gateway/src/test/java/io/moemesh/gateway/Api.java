package io.moemesh.gateway;

import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/** Test helpers: request bodies, posting, and parsing Server-Sent Events as an OpenAI client does. */
final class Api {
  static final ObjectMapper JSON = new ObjectMapper();
  static final int HTTP_PORT = 19100;

  private Api() {}

  static String newId(String prefix) {
    return prefix + "-" + UUID.randomUUID();
  }

  static ObjectNode chat(String userText) {
    ObjectNode body = JSON.createObjectNode().put("model", TestModel.SERVED_NAME);
    body.putArray("messages").addObject().put("role", "user").put("content", userText);
    return body;
  }

  static ObjectNode completion(String prompt) {
    return JSON.createObjectNode().put("model", TestModel.SERVED_NAME).put("prompt", prompt);
  }

  static Response post(String path, String requestId, Object body) {
    var spec = given().contentType(ContentType.JSON).body(body.toString());
    if (requestId != null) spec.header("X-Request-Id", requestId);
    return spec.when().post(path);
  }

  /** The JSON payloads of an SSE body, in order; the literal {@code [DONE]} is kept as a text node. */
  static List<JsonNode> events(String sseBody) {
    List<JsonNode> out = new ArrayList<>();
    for (String block : sseBody.split("\n\n")) {
      if (block.isBlank() || block.startsWith(":")) continue; // SSE comments (keep-alive)
      if (!block.startsWith("data: ")) throw new AssertionError("not an SSE data line: " + block);
      String data = block.substring("data: ".length());
      out.add(data.equals("[DONE]") ? JSON.getNodeFactory().textNode("[DONE]") : parse(data));
    }
    return out;
  }

  static JsonNode parse(String json) {
    try {
      return JSON.readTree(json);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The concatenated text of one choice across chunks (chat: delta.content; completions: text). */
  static String streamedText(List<JsonNode> events, int index) {
    StringBuilder text = new StringBuilder();
    for (JsonNode e : events) {
      for (JsonNode c : e.path("choices")) {
        if (c.path("index").asInt() != index) continue;
        JsonNode piece = c.has("delta") ? c.path("delta").path("content") : c.path("text");
        if (piece.isTextual()) text.append(piece.asText());
      }
    }
    return text.toString();
  }

  /**
   * Waits until the gateway is ready and every replica answers its Load poll (a test that made some unreachable
   * leaves them so for up to a poll interval), except those named, which stay down for good.
   */
  static void awaitReady(String... downForGood) {
    await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(50)).until(() -> {
      Response health = given().get("/q/health/ready");
      if (health.statusCode() != 200) return false;
      String body = health.asString();
      for (String replica : downForGood) {
        body = body.replaceAll("\"" + java.util.regex.Pattern.quote(replica) + "\"\\s*:\\s*\"unreachable\"", "");
      }
      return !body.contains("unreachable");
    });
  }
}
