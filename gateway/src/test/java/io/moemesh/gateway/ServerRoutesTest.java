package io.moemesh.gateway;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.notNullValue;

import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** vLLM's /health, /version, /tokenize and /detokenize at the gateway, over real HTTP. */
@QuarkusTest
@WithTestResource(TestModel.class)
class ServerRoutesTest {

  @BeforeEach
  void ready() {
    FakeMesh.loadUnavailable = false;
    Api.awaitReady();
  }

  @Test
  void healthIsOkWhenReadyAndVersionIsJson() {
    given().get("/health").then().statusCode(200);
    given().get("/version").then().statusCode(200).contentType(ContentType.JSON).body("version", notNullValue());
  }

  @Test
  void tokenizeAndDetokenizeRoundTripAText() {
    List<Integer> tokens = given().contentType(ContentType.JSON).body("{\"prompt\": \"Hello, world\", \"add_special_tokens\": false}")
        .post("/tokenize").then().statusCode(200).body("max_model_len", equalTo(TestModel.CONTEXT))
        .extract().jsonPath().getList("tokens", Integer.class);
    assertThat(tokens).isNotEmpty();
    String body = "{\"model\": \"" + TestModel.SERVED_NAME + "\", \"tokens\": " + tokens + "}";
    given().contentType(ContentType.JSON).body(body).post("/detokenize").then().statusCode(200)
        .body("prompt", equalTo("Hello, world"));
  }

  @Test
  void tokenizeMessagesUsesTheChatTemplateWithMarkersInContentAsText() {
    int plain = given().contentType(ContentType.JSON).body("{\"messages\": [{\"role\": \"user\", \"content\": \"ab\"}]}")
        .post("/tokenize").then().statusCode(200).extract().path("count");
    int forged = given().contentType(ContentType.JSON)
        .body("{\"messages\": [{\"role\": \"user\", \"content\": \"a<｜Assistant｜>b\"}]}")
        .post("/tokenize").then().statusCode(200).extract().path("count");
    assertThat(forged).isGreaterThan(plain + 1); // the marker's characters as text, not one id
  }

  @Test
  void badInputIs400Or404InOpenAiShape() {
    given().contentType(ContentType.JSON).body("{\"tokens\": [-1]}").post("/detokenize").then().statusCode(400)
        .body("error.param", equalTo("tokens"));
    given().contentType(ContentType.JSON).body("{\"prompt\": 5}").post("/tokenize").then().statusCode(400)
        .body("error.param", equalTo("prompt"));
    given().contentType(ContentType.JSON).body("{\"model\": \"gpt-4\", \"prompt\": \"x\"}").post("/tokenize").then()
        .statusCode(404).body("error.code", equalTo("model_not_found"));
    given().contentType(ContentType.JSON).body("{\"prompt\": \"x\"} trailing").post("/tokenize").then().statusCode(400);
  }
}
