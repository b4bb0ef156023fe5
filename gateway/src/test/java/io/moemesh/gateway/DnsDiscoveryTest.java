package io.moemesh.gateway;

import static io.moemesh.gateway.Api.completion;
import static io.moemesh.gateway.Api.newId;
import static io.moemesh.gateway.Api.post;
import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.equalTo;

import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Both pools given as {@code dns:///localhost:19101}: each address the name resolves to is a replica, and serves. */
@QuarkusTest
@WithTestResource(TestModel.class)
@TestProfile(DnsDiscoveryTest.ByName.class)
class DnsDiscoveryTest {
  public static class ByName implements QuarkusTestProfile {
    @Override
    public Map<String, String> getConfigOverrides() {
      return Map.of("moemesh.gateway.prefill.replicas", "dns:///localhost:19101", "moemesh.gateway.decode.replicas", "dns:///localhost:19101");
    }
  }

  @BeforeEach
  void ready() {
    Api.awaitReady();
  }

  @Test
  void theNameResolvesToReplicasThatServeRequests() {
    given().get("/q/health/ready").then().statusCode(200).body("checks.find { it.name == 'gateway model and decode replicas' }.data.'decode@127.0.0.1:19101'",
        equalTo("reachable"));
    String id = newId("dns");
    post("/v1/completions", id, completion("hello there")).then().statusCode(200);
    assertThat(FakeMesh.calls(id)).extracting(FakeMesh.Call::service).contains("prefill", "decode");
    assertThat(FakeMesh.calls(id)).allSatisfy(c -> assertThat(c.authority()).isEqualTo("127.0.0.1:19101"));
  }
}
