package io.moemesh.prefill;

import static io.moemesh.telemetry.testing.InMemorySpans.awaitSpan;
import static io.moemesh.telemetry.testing.InMemorySpans.named;
import static io.moemesh.telemetry.testing.Scrape.metric;
import static io.moemesh.prefill.PrefillServiceTest.GREEDY;
import static io.moemesh.prefill.PrefillServiceTest.TIMEOUT;
import static io.moemesh.prefill.PrefillServiceTest.prompt;
import static io.moemesh.prefill.PrefillServiceTest.request;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.moemesh.enginehost.telemetry.GenAiAttributes;
import io.moemesh.enginehost.testing.TinyCheckpointResource;
import io.moemesh.proto.common.v1.LoadReportRequest;
import io.moemesh.proto.prefill.v1.Prefill;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.quarkus.grpc.GrpcClient;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** prefill-svc's spans (InMemorySpans) and KV transfer metrics (/q/metrics), with the recording kv-store. */
@QuarkusTest
@QuarkusTestResource(TinyCheckpointResource.class)
class PrefillObservabilityTest {
  static final int HTTP_PORT = 19200;
  static final long ROW_BYTES = 40 * 2; // tiny: latent dim 40, BF16

  @GrpcClient("prefill")
  Prefill prefill;

  @Inject Tracer tracer;
  @Inject InMemorySpanExporter spans;

  @BeforeEach
  void awaitReady() {
    await().atMost(TIMEOUT).ignoreExceptions().until(() -> prefill.load(LoadReportRequest.getDefaultInstance()).await().atMost(TIMEOUT) != null);
  }

  @Test
  void aPrefillIsOneTraceFromTheCallersContextThroughTheKvPutToTheStore() {
    Span caller = tracer.spanBuilder("test caller").startSpan();
    try (Scope ignored = caller.makeCurrent()) {
      prefill.prefill(request("traced", prompt(11, 40), GREEDY)).await().atMost(TIMEOUT);
    } finally {
      caller.end();
    }
    String traceId = caller.getSpanContext().getTraceId();

    SpanData engine = awaitSpan(spans, named("prefill tiny", GenAiAttributes.RESPONSE_ID, "traced"));
    SpanData server = byId(engine.getParentSpanId());
    SpanData client = byId(server.getParentSpanId());
    assertThat(server.getName()).isEqualTo("moemesh.prefill.v1.Prefill/Prefill");
    assertThat(server.getKind()).isEqualTo(SpanKind.SERVER);
    assertThat(client.getKind()).isEqualTo(SpanKind.CLIENT);
    assertThat(client.getParentSpanId()).as("the caller's context crossed the call").isEqualTo(caller.getSpanContext().getSpanId());
    assertThat(engine.getKind()).isEqualTo(SpanKind.INTERNAL);
    assertThat(engine.getAttributes().get(GenAiAttributes.OPERATION_NAME)).isEqualTo("text_completion");
    assertThat(engine.getAttributes().get(GenAiAttributes.REQUEST_MODEL)).isEqualTo("tiny");
    assertThat(engine.getAttributes().get(GenAiAttributes.REQUEST_TEMPERATURE)).isEqualTo(0.0);
    assertThat(engine.getAttributes().get(GenAiAttributes.USAGE_INPUT_TOKENS)).isEqualTo(40L);
    assertThat(engine.getAttributes().get(GenAiAttributes.USAGE_OUTPUT_TOKENS)).isEqualTo(1L);
    assertThat(engine.getAttributes().get(GenAiAttributes.KV_OBJECT_KEY)).isEqualTo("traced");

    SpanData put = awaitSpan(spans, named("kv put", GenAiAttributes.KV_OBJECT_KEY, "traced"));
    assertThat(put.getParentSpanId()).isEqualTo(engine.getSpanId());
    assertThat(put.getAttributes().get(GenAiAttributes.KV_BYTES)).isEqualTo(40 * 3 * ROW_BYTES);
    assertThat(put.getAttributes().get(GenAiAttributes.KV_OUTCOME)).isEqualTo("committed");
    assertThat(put.getAttributes().get(GenAiAttributes.KV_STORE)).isEqualTo("localhost:19201");
    SpanData putCall = awaitSpan(spans, s -> s.getKind() == SpanKind.CLIENT && s.getParentSpanId().equals(put.getSpanId()));
    assertThat(putCall.getName()).isEqualTo("moemesh.kvstore.v1.KvStore/Put");
    SpanData storeServer = awaitSpan(spans, s -> s.getKind() == SpanKind.SERVER && s.getParentSpanId().equals(putCall.getSpanId()));
    assertThat(storeServer.getName()).as("the store's side of the put").isEqualTo("moemesh.kvstore.v1.KvStore/Put");

    assertThat(java.util.List.of(client, server, engine, put, putCall, storeServer))
        .extracting(SpanData::getTraceId).containsOnly(traceId);
  }

  @Test
  void kvBytesLatencyAndFailuresShowInTheMetrics() throws Exception {
    double bytes = metric(HTTP_PORT, "moemesh_kv_transfer_bytes_total{direction=\"sent\"}");
    double puts = metric(HTTP_PORT, "moemesh_kv_transfer_seconds_count{direction=\"sent\"}");
    double full = metric(HTTP_PORT, "moemesh_kv_transfer_failures_total{direction=\"sent\",reason=\"store_full\"}");
    prefill.prefill(request("metered", prompt(12, 20), GREEDY)).await().atMost(TIMEOUT);
    assertThatThrownBy(() -> prefill.prefill(request("full-metered", prompt(13, 10), GREEDY)).await().atMost(TIMEOUT))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE));

    // other tests' prefills may add to these, never subtract
    assertThat(metric(HTTP_PORT, "moemesh_kv_transfer_bytes_total{direction=\"sent\"}"))
        .isGreaterThanOrEqualTo(bytes + (20 + 10) * 3 * ROW_BYTES);
    assertThat(metric(HTTP_PORT, "moemesh_kv_transfer_seconds_count{direction=\"sent\"}")).isGreaterThanOrEqualTo(puts + 1);
    assertThat(metric(HTTP_PORT, "moemesh_kv_transfer_seconds_bucket{direction=\"sent\",le=\"+Inf\"}")).isGreaterThanOrEqualTo(puts + 1);
    assertThat(metric(HTTP_PORT, "moemesh_kv_transfer_failures_total{direction=\"sent\",reason=\"store_full\"}")).isEqualTo(full + 1);

    SpanData failed = awaitSpan(spans, named("kv put", GenAiAttributes.KV_OBJECT_KEY, "full-metered"));
    assertThat(failed.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(failed.getAttributes().get(GenAiAttributes.ERROR_TYPE)).isEqualTo("store_full");
    assertThat(failed.getAttributes().get(GenAiAttributes.KV_OUTCOME)).isEqualTo("failed");
    SpanData engine = awaitSpan(spans, named("prefill tiny", GenAiAttributes.RESPONSE_ID, "full-metered"));
    assertThat(engine.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(engine.getAttributes().get(GenAiAttributes.ERROR_TYPE)).isEqualTo("UNAVAILABLE");
  }

  private SpanData byId(String spanId) {
    return awaitSpan(spans, s -> s.getSpanId().equals(spanId));
  }
}
