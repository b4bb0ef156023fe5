package io.moemesh.gateway;

import static io.moemesh.gateway.Api.completion;
import static io.moemesh.gateway.Api.newId;
import static io.moemesh.gateway.Api.post;
import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;

import io.quarkus.test.common.WithTestResource;
import io.moemesh.telemetry.testing.Scrape;
import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Metrics on /q/metrics and health on /q/health, as Prometheus and Kubernetes read them. */
@QuarkusTest
@WithTestResource(TestModel.class)
class ObservabilityTest {

  @BeforeEach
  void ready() {
    Api.awaitReady();
  }

  @Test
  void requestsShowInTheMetrics() {
    double ok = metric("moemesh_gateway_requests_total{endpoint=\"completion\",status=\"200\"}");
    double bad = metric("moemesh_gateway_requests_total{endpoint=\"completion\",status=\"404\"}");
    double generated = metric("moemesh_gateway_generation_tokens_total");
    double ttft = metric("moemesh_gateway_time_to_first_token_seconds_count");
    String id = newId("metrics");
    FakeMesh.script(id, FakeMesh.Script.says("four tokens or so"));
    int tokens = post("/v1/completions", id, completion("hi")).then().statusCode(200).extract()
        .path("usage.completion_tokens");
    post("/v1/completions", null, completion("hi").put("model", "nope")).then().statusCode(404);

    assertThat(metric("moemesh_gateway_requests_total{endpoint=\"completion\",status=\"200\"}")).isGreaterThanOrEqualTo(ok + 1);
    assertThat(metric("moemesh_gateway_requests_total{endpoint=\"completion\",status=\"404\"}")).isGreaterThanOrEqualTo(bad + 1);
    assertThat(metric("moemesh_gateway_generation_tokens_total")).isGreaterThanOrEqualTo(generated + tokens);
    assertThat(metric("moemesh_gateway_time_to_first_token_seconds_count")).isGreaterThanOrEqualTo(ttft + 1);
    assertThat(metric("moemesh_gateway_e2e_request_latency_seconds_count")).isGreaterThanOrEqualTo(2);
    assertThat(metric("moemesh_gateway_prompt_tokens_total")).isPositive();
  }

  @Test
  void livenessAndReadinessAreUp() {
    given().get("/q/health/live").then().statusCode(200).body("status", equalTo("UP"))
        .body("checks.name", hasItem("gateway"));
    given().get("/q/health/ready").then().statusCode(200).body("status", equalTo("UP"))
        .body("checks.name", hasItem("gateway model and decode replicas"));
  }

  /**
   * The value of one sample, e.g. {@code moemesh_gateway_requests_total{endpoint="completion",status="200"}} (the first
   * sample with those labels); 0 if absent. The scrape is OpenMetrics, so a sample recorded inside a trace carries an
   * exemplar after its value, which {@link Scrape} never takes for it.
   */
  static double metric(String sample) {
    return Scrape.parse(given().get("/q/metrics").then().statusCode(200).extract().asString()).value(sample);
  }
}
