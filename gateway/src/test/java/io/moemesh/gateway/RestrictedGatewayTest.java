package io.moemesh.gateway;

import static io.moemesh.gateway.Api.chat;
import static io.moemesh.gateway.Api.newId;
import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.equalTo;

import io.moemesh.proto.decode.v1.GenerateRequest;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.http.ContentType;
import io.restassured.specification.RequestSpecification;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** API keys, the in-flight limit and the non-disaggregated path (decode computes the prompt itself). */
@QuarkusTest
@WithTestResource(TestModel.class)
@TestProfile(RestrictedGatewayTest.Restricted.class)
class RestrictedGatewayTest {
  static final String KEY = "sk-test-key";

  public static class Restricted implements QuarkusTestProfile {
    @Override
    public Map<String, String> getConfigOverrides() {
      // the second decode replica never answers: routing must skip it
      return Map.of("moemesh.gateway.api-keys", "other-key," + KEY, "moemesh.gateway.max-in-flight", "1",
          "moemesh.gateway.disaggregation", "false", "moemesh.gateway.decode.replicas", "localhost:19101,localhost:1");
    }
  }

  @BeforeEach
  void ready() {
    Api.awaitReady("decode@localhost:1");
  }

  private static RequestSpecification authorized() {
    return given().header("Authorization", "Bearer " + KEY).contentType(ContentType.JSON);
  }

  @Test
  void missingOrWrongKeyIs401() {
    given().contentType(ContentType.JSON).body(chat("hi").toString()).post("/v1/chat/completions").then()
        .statusCode(401).body("error.code", equalTo("invalid_api_key"));
    given().header("Authorization", "Bearer nope").contentType(ContentType.JSON).body(chat("hi").toString())
        .post("/v1/chat/completions").then().statusCode(401).body("error.message", equalTo("Incorrect API key provided."));
    given().get("/v1/models").then().statusCode(401);
    authorized().get("/v1/models").then().statusCode(200);
    given().get("/q/health/live").then().statusCode(200); // probes need no key
  }

  @Test
  void withoutDisaggregationDecodeGetsThePromptAndNoTicket() {
    String id = newId("no-pd");
    FakeMesh.script(id, FakeMesh.Script.says("Decode did it all."));
    authorized().header("X-Request-Id", id).body(chat("hi").put("max_tokens", 40).toString())
        .post("/v1/chat/completions").then().statusCode(200)
        .body("choices[0].message.content", equalTo("Decode did it all."));
    assertThat(FakeMesh.calls(id)).extracting(FakeMesh.Call::service).containsExactly("decode");
    var decode = (GenerateRequest) FakeMesh.calls(id).getFirst().request();
    assertThat(decode.hasTicket()).isFalse();
    assertThat(decode.hasFirstToken()).isFalse();
    assertThat(decode.getPromptTokenIdsCount()).isPositive();
    assertThat(decode.getMaxTokens()).isEqualTo(40);
  }

  @Test
  void anUnreachableReplicaIsSkippedAndShownInReadiness() {
    var health = Api.parse(given().get("/q/health/ready").then().statusCode(200).extract().asString());
    var check = java.util.stream.StreamSupport.stream(health.path("checks").spliterator(), false)
        .filter(c -> c.path("name").asText().equals("gateway model and decode replicas")).findFirst().orElseThrow();
    assertThat(check.path("data").path("decode@localhost:19101").asText()).isEqualTo("reachable");
    assertThat(check.path("data").path("decode@localhost:1").asText()).isEqualTo("unreachable");
    for (int i = 0; i < 3; i++) {
      String id = newId("skip-dead");
      authorized().header("X-Request-Id", id).body(chat("hi").toString()).post("/v1/chat/completions").then()
          .statusCode(200);
      assertThat(FakeMesh.calls(id, "decode")).hasSize(1);
    }
  }

  /** Admission counts generations: n = 2 takes two of the one slot there is, so it is refused and frees what it took. */
  @Test
  void aRequestOfMoreGenerationsThanTheLimitIs429AndLeavesNoSlotTaken() {
    authorized().body(chat("two of them").put("n", 2).toString()).post("/v1/chat/completions").then().statusCode(429)
        .header("Retry-After", equalTo("1")).body("error.message", org.hamcrest.Matchers.containsString("generations in flight"));
    authorized().body(chat("one").toString()).post("/v1/chat/completions").then().statusCode(200);
  }

  @Test
  void overTheInFlightLimitIs429WithRetryAfter() throws Exception {
    String id = newId("hog");
    FakeMesh.script(id, FakeMesh.Script.says("holding the only slot").hanging());
    byte[] body = chat("hi").put("stream", true).toString().getBytes(StandardCharsets.UTF_8);
    try (Socket hog = new Socket("localhost", Api.HTTP_PORT)) {
      OutputStream out = hog.getOutputStream();
      out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
          + "Authorization: Bearer " + KEY + "\r\nX-Request-Id: " + id + "\r\nContent-Length: " + body.length
          + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      out.write(body);
      out.flush();
      await().atMost(Duration.ofSeconds(5)).until(() -> !FakeMesh.calls(id, "decode").isEmpty());
      authorized().body(chat("me too").toString()).post("/v1/chat/completions").then().statusCode(429)
          .header("Retry-After", equalTo("1")).body("error.code", equalTo("rate_limit_exceeded"));
    }
    await().atMost(Duration.ofSeconds(5)).until(() -> FakeMesh.calls(id, "decode").getFirst().cancelled().get());
    // the slot is free again once the hog's cancellation went through
    await().atMost(Duration.ofSeconds(5)).until(() ->
        authorized().body(chat("now").toString()).post("/v1/chat/completions").statusCode() == 200);
  }
}
