package io.moemesh.decode;

import static io.moemesh.decode.DecodeServiceTest.TIMEOUT;
import static io.moemesh.decode.DecodeServiceTest.prompt;
import static io.moemesh.decode.DecodeServiceTest.request;
import static io.moemesh.telemetry.testing.InMemorySpans.awaitSpan;
import static io.moemesh.telemetry.testing.InMemorySpans.named;
import static io.moemesh.telemetry.testing.Scrape.metric;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.moemesh.enginehost.telemetry.GenAiAttributes;
import io.moemesh.enginehost.testing.TinyCheckpointResource;
import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.common.v1.LoadReportRequest;
import io.moemesh.proto.common.v1.SampledToken;
import io.moemesh.proto.common.v1.SamplingParams;
import io.moemesh.proto.decode.v1.Decode;
import io.moemesh.proto.decode.v1.GenerateRequest;
import io.moemesh.proto.decode.v1.GenerateResponse;
import io.moemesh.proto.decode.v1.LoadFailurePolicy;
import io.moemesh.proto.prefill.v1.KvTicket;
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
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** decode-svc's spans (InMemorySpans) and KV transfer metrics (/q/metrics), pulling from a fake kv-store. */
@QuarkusTest
@QuarkusTestResource(TinyCheckpointResource.class)
class DecodeObservabilityTest {
  static final int HTTP_PORT = 19300;
  static final SamplingParams GREEDY = SamplingParams.newBuilder().setIgnoreEos(true).build();

  @GrpcClient("decode")
  Decode decode;

  @Inject Tracer tracer;
  @Inject InMemorySpanExporter spans;

  @BeforeEach
  void awaitReady() {
    await().atMost(TIMEOUT).ignoreExceptions().until(() -> decode.load(LoadReportRequest.getDefaultInstance()).await().atMost(TIMEOUT) != null);
  }

  /** A Generate whose prompt KV is object {@code key} of {@code store}; a failed load fails the request. */
  static GenerateRequest withTicket(String id, String store, String key, int numTokens, int maxTokens) {
    var ticket = KvTicket.newBuilder().setStoreAddress(store).setObjectKey(key).setNumTokens(numTokens).build();
    return request(id, prompt(21, numTokens), GREEDY, maxTokens).toBuilder().setTicket(ticket)
        .setFirstToken(SampledToken.newBuilder().setTokenId(7)).setOnLoadFailure(LoadFailurePolicy.LOAD_FAILURE_POLICY_FAIL).build();
  }

  /** The kernels' instruction-set path is a label of moemesh_kernels_info, the one this JVM's kernels pick. */
  @Test
  void theKernelsPathIsExported() throws Exception {
    String path;
    try (var kernels = io.moemesh.kernels.KernelBackend.NATIVE.open(1)) {
      path = kernels.path();
    }
    assertThat(metric(HTTP_PORT, "moemesh_kernels_info{path=\"" + path + "\"}")).isEqualTo(1.0);
    assertThat(metric(HTTP_PORT, "moemesh_kernels_info{path=\"not-a-path\"}")).isZero();
  }

  @Test
  void aDecodeIsOneTraceFromTheCallersContextThroughTheKvGetToTheStore() {
    FakeKvStore.hold("kv-traced", 12);
    Span caller = tracer.spanBuilder("test caller").startSpan();
    List<GenerateResponse> responses;
    try (Scope ignored = caller.makeCurrent()) {
      responses = decode.generate(withTicket("traced", FakeKvStore.ADDRESS, "kv-traced", 12, 4)).collect().asList().await().atMost(TIMEOUT);
    } finally {
      caller.end();
    }
    GenerateResponse last = responses.getLast();
    assertThat(last.getFinishReason()).isEqualTo(FinishReason.FINISH_REASON_LENGTH);
    String traceId = caller.getSpanContext().getTraceId();

    SpanData engine = awaitSpan(spans, named("decode tiny", GenAiAttributes.RESPONSE_ID, "traced"));
    SpanData server = byId(engine.getParentSpanId());
    SpanData client = byId(server.getParentSpanId());
    assertThat(server.getName()).isEqualTo("moemesh.decode.v1.Decode/Generate");
    assertThat(server.getKind()).isEqualTo(SpanKind.SERVER);
    assertThat(client.getParentSpanId()).as("the caller's context crossed the call").isEqualTo(caller.getSpanContext().getSpanId());
    assertThat(engine.getAttributes().get(GenAiAttributes.OPERATION_NAME)).isEqualTo("text_completion");
    assertThat(engine.getAttributes().get(GenAiAttributes.REQUEST_MODEL)).isEqualTo("tiny");
    assertThat(engine.getAttributes().get(GenAiAttributes.REQUEST_MAX_TOKENS)).isEqualTo(4L);
    assertThat(engine.getAttributes().get(GenAiAttributes.USAGE_INPUT_TOKENS)).isEqualTo(12L);
    assertThat(engine.getAttributes().get(GenAiAttributes.USAGE_OUTPUT_TOKENS)).isEqualTo((long) last.getUsage().getCompletionTokens());
    assertThat(engine.getAttributes().get(GenAiAttributes.RESPONSE_FINISH_REASONS)).containsExactly("length");
    assertThat(engine.getAttributes().get(GenAiAttributes.KV_OBJECT_KEY)).isEqualTo("kv-traced");

    SpanData get = awaitSpan(spans, named("kv get", GenAiAttributes.KV_OBJECT_KEY, "kv-traced"));
    assertThat(get.getParentSpanId()).isEqualTo(engine.getSpanId());
    assertThat(get.getAttributes().get(GenAiAttributes.KV_BYTES)).isEqualTo(12L * 3 * FakeKvStore.ROW_BYTES);
    assertThat(get.getAttributes().get(GenAiAttributes.KV_STORE)).isEqualTo(FakeKvStore.ADDRESS);
    SpanData getCall = awaitSpan(spans, s -> s.getName().equals("moemesh.kvstore.v1.KvStore/Get") && s.getKind() == SpanKind.CLIENT
        && s.getParentSpanId().equals(get.getSpanId()));
    SpanData storeServer = awaitSpan(spans, s -> s.getKind() == SpanKind.SERVER && s.getParentSpanId().equals(getCall.getSpanId()));
    assertThat(storeServer.getName()).as("the store's side of the get").isEqualTo("moemesh.kvstore.v1.KvStore/Get");
    SpanData release = awaitSpan(spans, s -> s.getName().equals("moemesh.kvstore.v1.KvStore/Release") && s.getKind() == SpanKind.CLIENT
        && s.getParentSpanId().equals(get.getSpanId()));
    assertThat(FakeKvStore.RELEASED).contains("kv-traced");

    assertThat(List.of(client, server, engine, get, getCall, storeServer, release)).extracting(SpanData::getTraceId).containsOnly(traceId);
  }

  @Test
  void kvBytesLatencyAndFailuresShowInTheMetrics() throws Exception {
    double bytes = metric(HTTP_PORT, "moemesh_kv_transfer_bytes_total{direction=\"received\"}");
    double gets = metric(HTTP_PORT, "moemesh_kv_transfer_seconds_count{direction=\"received\"}");
    double notFound = metric(HTTP_PORT, "moemesh_kv_transfer_failures_total{direction=\"received\",reason=\"object_not_found\"}");
    double unavailable = metric(HTTP_PORT, "moemesh_kv_transfer_failures_total{direction=\"received\",reason=\"store_unavailable\"}");
    FakeKvStore.hold("kv-metered", 20);
    assertThat(decode.generate(withTicket("metered", FakeKvStore.ADDRESS, "kv-metered", 20, 2)).collect().asList().await().atMost(TIMEOUT)
        .getLast().getFinishReason()).isEqualTo(FinishReason.FINISH_REASON_LENGTH);
    GenerateResponse lost = decode.generate(withTicket("lost", FakeKvStore.ADDRESS, "kv-never-put", 9, 2)).collect().asList()
        .await().atMost(TIMEOUT).getLast();
    assertThat(lost.getFinishReason()).isEqualTo(FinishReason.FINISH_REASON_ERROR);
    assertThat(decode.generate(withTicket("no-store", "localhost:1", "kv-nowhere", 9, 2)).collect().asList().await().atMost(TIMEOUT)
        .getLast().getFinishReason()).isEqualTo(FinishReason.FINISH_REASON_ERROR);

    // other tests' loads may add to these, never subtract
    assertThat(metric(HTTP_PORT, "moemesh_kv_transfer_bytes_total{direction=\"received\"}"))
        .isGreaterThanOrEqualTo(bytes + 20 * 3 * FakeKvStore.ROW_BYTES);
    assertThat(metric(HTTP_PORT, "moemesh_kv_transfer_seconds_count{direction=\"received\"}")).isGreaterThanOrEqualTo(gets + 1);
    assertThat(metric(HTTP_PORT, "moemesh_kv_transfer_seconds_bucket{direction=\"received\",le=\"+Inf\"}")).isGreaterThanOrEqualTo(gets + 1);
    assertThat(metric(HTTP_PORT, "moemesh_kv_transfer_failures_total{direction=\"received\",reason=\"object_not_found\"}")).isEqualTo(notFound + 1);
    assertThat(metric(HTTP_PORT, "moemesh_kv_transfer_failures_total{direction=\"received\",reason=\"store_unavailable\"}"))
        .isGreaterThanOrEqualTo(unavailable + 1);

    SpanData failed = awaitSpan(spans, named("kv get", GenAiAttributes.KV_OBJECT_KEY, "kv-never-put"));
    assertThat(failed.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(failed.getAttributes().get(GenAiAttributes.ERROR_TYPE)).isEqualTo("object_not_found");
    SpanData engine = awaitSpan(spans, named("decode tiny", GenAiAttributes.RESPONSE_ID, "lost"));
    assertThat(engine.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(engine.getStatus().getDescription()).isEqualTo(lost.getError());
  }

  private SpanData byId(String spanId) {
    return awaitSpan(spans, s -> s.getSpanId().equals(spanId));
  }
}
