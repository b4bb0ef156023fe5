package io.moemesh.kvstore;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;

import io.moemesh.proto.kvstore.v1.GetRequest;
import io.moemesh.proto.kvstore.v1.KvLayout;
import io.moemesh.proto.kvstore.v1.KvStore;
import io.moemesh.telemetry.testing.Scrape;
import io.quarkus.grpc.GrpcClient;
import io.quarkus.test.junit.QuarkusTest;
import io.smallrye.mutiny.Multi;
import java.time.Duration;
import java.util.UUID;
import java.util.OptionalDouble;
import org.junit.jupiter.api.Test;

/** Metrics on /q/metrics and health on /q/health, as Prometheus and Kubernetes read them. */
@QuarkusTest
class ObservabilityTest {
  @GrpcClient("kvstore")
  KvStore kvStore;

  @Test
  void putAndGetShowInTheMetrics() {
    double putBefore = metric("moemesh_kvstore_put_bytes_total");
    double getBefore = metric("moemesh_kvstore_get_bytes_total");
    String key = "req-" + UUID.randomUUID();
    KvLayout layout = KvWire.layout(2, 16);
    kvStore.put(Multi.createFrom().iterable(KvWire.fullPut(key, layout, KvWire.randomLayers(layout, 1))))
        .await().atMost(Duration.ofSeconds(5));
    kvStore.get(GetRequest.newBuilder().setKey(key).build()).collect().asList().await().atMost(Duration.ofSeconds(5));

    long objectBytes = 2L * 16 * KvWire.ROW_BYTES;
    // other tests may run puts too, never fewer bytes than ours
    assertThat(metric("moemesh_kvstore_put_bytes_total")).isGreaterThanOrEqualTo(putBefore + objectBytes);
    assertThat(metric("moemesh_kvstore_get_bytes_total")).isGreaterThanOrEqualTo(getBefore + objectBytes);
    assertThat(metric("moemesh_kvstore_bytes")).isGreaterThanOrEqualTo(objectBytes);
    assertThat(metric("moemesh_kvstore_objects{state=\"live\"}")).isGreaterThanOrEqualTo(1);
    assertThat(metric("moemesh_kvstore_evictions_total")).isGreaterThanOrEqualTo(0);
    assertThat(metric("moemesh_kvstore_put_seconds_count")).isGreaterThanOrEqualTo(1);
    assertThat(metric("moemesh_kvstore_get_seconds_count")).isGreaterThanOrEqualTo(1);
    assertThat(metric("moemesh_kvstore_puts_total{outcome=\"committed\"}")).isGreaterThanOrEqualTo(1);
  }

  @Test
  void livenessAndReadinessAreUp() {
    given().when().get("/q/health/live").then().statusCode(200)
        .body("status", equalTo("UP")).body("checks.name", hasItem("kv-store lease reaper"));
    given().when().get("/q/health/ready").then().statusCode(200)
        .body("status", equalTo("UP")).body("checks.name", hasItem("kv-store memory"));
  }

  /** The value of one sample, e.g. {@code moemesh_kvstore_objects{state="live"}} (the first with those labels), which must be exported. */
  static double metric(String sample) {
    String body = given().when().get("/q/metrics").then().statusCode(200).extract().asString();
    OptionalDouble value = Scrape.parse(body).find(sample);
    assertThat(value).as("sample %s in /q/metrics:%n%s", sample, body).isPresent();
    return value.getAsDouble();
  }
}
