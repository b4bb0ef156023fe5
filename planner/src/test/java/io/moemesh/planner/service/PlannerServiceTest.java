package io.moemesh.planner.service;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/**
 * The service in advisory mode against one prefill and one decode replica serving recorded /q/metrics (unchanging, so
 * every interval has no new requests): decode's 10 running requests need 2 replicas of 8; prefill's 1000 queued prompt
 * tokens over the 30 s backlog need 1.
 */
@QuarkusTest
@QuarkusTestResource(RecordedMesh.class)
class PlannerServiceTest {
  // the first round has no interval yet and keeps the count; the second asks for 2
  static final String DECODE_DESIRED = "moemesh_planner_replicas{kind=\"desired\",stage=\"decode\"} 2.0";

  @Test
  void exportsEachStagesDesiredAndActualReplicas() throws InterruptedException {
    Instant deadline = Instant.now().plus(Duration.ofSeconds(30));
    String metrics = "";
    while (Instant.now().isBefore(deadline) && !metrics.contains(DECODE_DESIRED)) {
      Thread.sleep(100);
      metrics = given().get("/q/metrics").then().statusCode(200).extract().asString();
    }
    assertThat(metrics).contains(DECODE_DESIRED)
        .contains("moemesh_planner_replicas{kind=\"actual\",stage=\"decode\"} 1.0")
        .contains("moemesh_planner_replicas{kind=\"desired\",stage=\"prefill\"} 1.0")
        .contains("moemesh_planner_observed_running_requests{stage=\"decode\"} 10.0")
        .contains("moemesh_planner_observed_kv_usage 0.3");
  }

  @Test
  void isLiveWhileRoundsEnd() {
    given().get("/q/health/live").then().statusCode(200);
  }
}
