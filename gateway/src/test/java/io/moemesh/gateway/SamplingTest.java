package io.moemesh.gateway;

import static io.moemesh.gateway.Api.chat;
import static io.moemesh.gateway.Api.newId;
import static io.moemesh.telemetry.testing.InMemorySpans.awaitSpan;
import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import jakarta.inject.Inject;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The sampling ratio of new traces is run-time configuration: at 0 a request without a caller's trace makes no span,
 * while a request whose caller sampled its trace is traced in full (the sampler follows the parent).
 */
@QuarkusTest
@WithTestResource(TestModel.class)
@TestProfile(SamplingTest.NoNewTraces.class)
class SamplingTest {
  public static class NoNewTraces implements QuarkusTestProfile {
    @Override
    public Map<String, String> getConfigOverrides() {
      return Map.of("quarkus.otel.traces.sampler.arg", "0.0");
    }
  }

  @Inject InMemorySpanExporter spans;

  @BeforeEach
  void ready() {
    Api.awaitReady();
  }

  @Test
  void atRatioZeroOnlyACallersSampledTraceIsRecorded() {
    String untraced = newId("unsampled"), traced = newId("sampled");
    FakeMesh.script(untraced, FakeMesh.Script.says("a few tokens"));
    FakeMesh.script(traced, FakeMesh.Script.says("a few tokens"));
    given().contentType("application/json").header("X-Request-Id", untraced).body(chat("hi").toString())
        .post("/v1/chat/completions").then().statusCode(200);
    given().contentType("application/json").header("X-Request-Id", traced)
        .header("traceparent", "00-" + TracingTest.CLIENT_TRACE + "-" + TracingTest.CLIENT_SPAN + "-01").body(chat("hi").toString())
        .post("/v1/chat/completions").then().statusCode(200);

    var generation = awaitSpan(spans, s -> traced.equals(s.getAttributes().get(GenerationSpan.CLIENT_REQUEST_ID)));
    assertThat(generation.getTraceId()).isEqualTo(TracingTest.CLIENT_TRACE);
    // the traced request came second and its spans are exported: the first one's would be there by now
    assertThat(spans.getFinishedSpanItems()).as("spans of the request without a sampled caller")
        .noneMatch(s -> untraced.equals(s.getAttributes().get(GenerationSpan.CLIENT_REQUEST_ID)))
        .allMatch(s -> s.getTraceId().equals(TracingTest.CLIENT_TRACE));
  }
}
