package io.moemesh.gateway;

import static io.moemesh.gateway.Api.chat;
import static io.moemesh.gateway.Api.newId;
import static io.moemesh.telemetry.testing.InMemorySpans.awaitSpan;
import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.moemesh.telemetry.testing.InMemorySpans;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * One trace per request: the client's traceparent is honoured by the HTTP server span, under it the GenAI span of the
 * request, under that a client span per prefill and decode call, and the (fake) replicas' server spans under those.
 */
@QuarkusTest
@WithTestResource(TestModel.class)
class TracingTest {
  static final String CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
  static final String CLIENT_SPAN = "00f067aa0ba902b7";

  @Inject InMemorySpanExporter spans;

  @BeforeEach
  void ready() {
    Api.awaitReady();
  }

  @Test
  void aChatIsOneTraceFromTheClientsTraceparentToTheReplicas() {
    String id = newId("traced");
    FakeMesh.script(id, FakeMesh.Script.says("four tokens or so"));
    var response = given().contentType("application/json").header("X-Request-Id", id)
        .header("traceparent", "00-" + CLIENT_TRACE + "-" + CLIENT_SPAN + "-01")
        .body(chat("hi").put("max_tokens", 50).put("temperature", 0.5).put("n", 2).toString())
        .post("/v1/chat/completions").then().statusCode(200).extract();

    SpanData generation = request(id);
    assertThat(generation.getName()).isEqualTo("chat " + TestModel.SERVED_NAME);
    assertThat(generation.getTraceId()).isEqualTo(CLIENT_TRACE);
    SpanData http = awaitSpan(spans, s -> s.getSpanId().equals(generation.getParentSpanId()));
    assertThat(http.getKind()).isEqualTo(SpanKind.SERVER);
    assertThat(http.getParentSpanId()).as("the client's traceparent is the parent").isEqualTo(CLIENT_SPAN);

    var a = generation.getAttributes();
    assertThat(a.get(GenerationSpan.OPERATION_NAME)).isEqualTo("chat");
    assertThat(a.get(GenerationSpan.REQUEST_MODEL)).isEqualTo(TestModel.SERVED_NAME);
    assertThat(a.get(GenerationSpan.REQUEST_MAX_TOKENS)).isEqualTo(50L);
    assertThat(a.get(GenerationSpan.REQUEST_TEMPERATURE)).isEqualTo(0.5);
    assertThat(a.get(GenerationSpan.REQUEST_CHOICE_COUNT)).isEqualTo(2L);
    assertThat(a.get(GenerationSpan.RESPONSE_FINISH_REASONS)).containsExactly("stop", "stop");
    assertThat(a.get(GenerationSpan.USAGE_INPUT_TOKENS)).isEqualTo(response.<Integer>path("usage.prompt_tokens").longValue());
    assertThat(a.get(GenerationSpan.USAGE_OUTPUT_TOKENS)).isEqualTo(response.<Integer>path("usage.completion_tokens").longValue());
    assertThat(generation.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);

    List<SpanData> calls = InMemorySpans.awaitSpans(spans, s -> s.getKind() == SpanKind.CLIENT
        && s.getParentSpanId().equals(generation.getSpanId()), 4);
    assertThat(calls).extracting(SpanData::getName).containsExactlyInAnyOrder("moemesh.prefill.v1.Prefill/Prefill",
        "moemesh.prefill.v1.Prefill/Prefill", "moemesh.decode.v1.Decode/Generate", "moemesh.decode.v1.Decode/Generate");
    for (SpanData call : calls) {
      SpanData replica = awaitSpan(spans, s -> s.getKind() == SpanKind.SERVER && s.getParentSpanId().equals(call.getSpanId()));
      assertThat(replica.getName()).as("the replica's side of the call").isEqualTo(call.getName());
      assertThat(replica.getTraceId()).isEqualTo(CLIENT_TRACE);
    }
  }

  @Test
  void aFailedRequestsSpanHasAnErrorStatus() {
    String id = newId("traced-failure");
    FakeMesh.script(id, FakeMesh.Script.says("never").failing(Status.INTERNAL.withDescription("boom")));
    Api.post("/v1/completions", id, Api.completion("hi")).then().statusCode(502);

    SpanData generation = request(id);
    assertThat(generation.getName()).isEqualTo("text_completion " + TestModel.SERVED_NAME);
    assertThat(generation.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(generation.getAttributes().get(GenerationSpan.ERROR_TYPE)).isNotBlank();
  }

  private SpanData request(String id) {
    return awaitSpan(spans, s -> id.equals(s.getAttributes().get(GenerationSpan.CLIENT_REQUEST_ID)));
  }
}
