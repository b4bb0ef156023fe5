package io.moemesh.gateway;

import static io.moemesh.gateway.Api.completion;
import static io.moemesh.gateway.Api.newId;
import static io.moemesh.gateway.Api.post;
import static io.moemesh.gateway.ObservabilityTest.metric;
import static org.assertj.core.api.Assertions.assertThat;

import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Cache-aware prefill routing through the gateway: the test app's two prefill replica addresses (localhost and
 * 127.0.0.1, one fake behind both) are told apart by the authority each call was sent to.
 */
@QuarkusTest
@WithTestResource(TestModel.class)
class PrefillRoutingTest {
  static final String SHARED = "You are a careful assistant. Answer in one short sentence, cite nothing, and never apologise. "
      + "The user asks about the weather, the tides and the moon over the harbour tonight, in plain words. ";

  @BeforeEach
  void ready() {
    Api.awaitReady();
  }

  @Test
  void promptsSharingAPrefixGoToTheReplicaThatComputedIt() {
    double byPrefix = metric("moemesh_gateway_prefill_routed_total{reason=\"prefix\"}");
    double prefixTokens = metric("moemesh_gateway_prefill_prefix_tokens_total");
    List<String> ids = List.of(newId("prefix-a"), newId("prefix-b"), newId("prefix-c"), newId("prefix-d"));
    for (int i = 0; i < ids.size(); i++)
      post("/v1/completions", ids.get(i), completion(SHARED + "Question " + i + ": is it " + (i % 2 == 0 ? "calm" : "rough") + "?"))
          .then().statusCode(200);

    List<String> authorities = ids.stream().map(id -> FakeMesh.calls(id).stream().filter(c -> c.service().equals("prefill"))
        .findFirst().orElseThrow().authority()).toList();
    assertThat(authorities).as("every prompt after the first to where the first was computed").containsOnly(authorities.getFirst());
    assertThat(metric("moemesh_gateway_prefill_routed_total{reason=\"prefix\"}")).isGreaterThanOrEqualTo(byPrefix + 3);
    assertThat(metric("moemesh_gateway_prefill_prefix_tokens_total")).as("3 prompts, each at least one 16-token block known")
        .isGreaterThanOrEqualTo(prefixTokens + 3 * 16);
  }
}
