package io.moemesh.kvstore;

import static io.moemesh.telemetry.testing.InMemorySpans.awaitSpan;
import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.proto.kvstore.v1.GetRequest;
import io.moemesh.proto.kvstore.v1.KvLayout;
import io.moemesh.proto.kvstore.v1.KvStore;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.quarkus.grpc.GrpcClient;
import io.quarkus.test.junit.QuarkusTest;
import io.smallrye.mutiny.Multi;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** Put and Get join the caller's trace (W3C context in the gRPC metadata) and name the object they moved. */
@QuarkusTest
class TracingTest {
  @GrpcClient("kvstore")
  KvStore kvStore;

  @Inject Tracer tracer;
  @Inject InMemorySpanExporter spans;

  @Test
  void putAndGetAreServerSpansInTheCallersTraceWithTheObjectsKeyAndBytes() {
    String key = "traced-" + UUID.randomUUID();
    KvLayout layout = KvWire.layout(2, 16);
    Span caller = tracer.spanBuilder("test caller").startSpan();
    try (Scope ignored = caller.makeCurrent()) {
      kvStore.put(Multi.createFrom().iterable(KvWire.fullPut(key, layout, KvWire.randomLayers(layout, 3))))
          .await().atMost(Duration.ofSeconds(5));
      kvStore.get(GetRequest.newBuilder().setKey(key).build()).collect().asList().await().atMost(Duration.ofSeconds(5));
    } finally {
      caller.end();
    }
    long objectBytes = 2L * 16 * KvWire.ROW_BYTES;

    SpanData put = awaitSpan(spans, s -> key.equals(s.getAttributes().get(KvSpans.OBJECT_KEY))
        && s.getName().equals("moemesh.kvstore.v1.KvStore/Put"));
    SpanData get = awaitSpan(spans, s -> key.equals(s.getAttributes().get(KvSpans.OBJECT_KEY))
        && s.getName().equals("moemesh.kvstore.v1.KvStore/Get"));
    for (SpanData server : List.of(put, get)) {
      assertThat(server.getKind()).isEqualTo(SpanKind.SERVER);
      assertThat(server.getTraceId()).isEqualTo(caller.getSpanContext().getTraceId());
      assertThat(server.getAttributes().get(KvSpans.BYTES)).isEqualTo(objectBytes);
      SpanData client = awaitSpan(spans, s -> s.getSpanId().equals(server.getParentSpanId()));
      assertThat(client.getKind()).as("the server span's parent is the caller's call").isEqualTo(SpanKind.CLIENT);
      assertThat(client.getParentSpanId()).isEqualTo(caller.getSpanContext().getSpanId());
    }
    assertThat(put.getAttributes().get(KvSpans.OUTCOME)).isEqualTo("committed");
  }
}
