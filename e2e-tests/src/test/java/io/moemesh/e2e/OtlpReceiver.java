package io.moemesh.e2e;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;
import java.util.zip.GZIPInputStream;

/**
 * An OTLP/HTTP trace receiver (protobuf, {@code POST /v1/traces}) on a free loopback port, for the services started
 * with {@code moemesh.otlp.endpoint=}{@link #endpoint()}: it keeps every span it is sent.
 */
final class OtlpReceiver implements AutoCloseable {
  /** One received span; ids in lower-case hex, {@code parentSpanId} empty for a root; its events in order. */
  record ReceivedSpan(String service, String traceId, String spanId, String parentSpanId, String name,
      io.opentelemetry.proto.trace.v1.Span.SpanKind kind, Map<String, String> attributes, List<ReceivedEvent> events) {}

  /** One event of a span. */
  record ReceivedEvent(String name, Map<String, String> attributes) {}

  private static final HexFormat HEX = HexFormat.of();
  private final HttpServer server;
  private final ConcurrentLinkedQueue<ReceivedSpan> spans = new ConcurrentLinkedQueue<>();

  OtlpReceiver() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/v1/traces", this::export);
    server.start();
  }

  String endpoint() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  /** Every span received so far. */
  List<ReceivedSpan> all() {
    return List.copyOf(spans);
  }

  /** The spans received so far of one trace. */
  List<ReceivedSpan> trace(String traceId) {
    return spans.stream().filter(s -> s.traceId().equals(traceId)).toList();
  }

  private void export(HttpExchange exchange) throws IOException {
    try (exchange) {
      InputStream body = exchange.getRequestBody();
      if ("gzip".equalsIgnoreCase(exchange.getRequestHeaders().getFirst("Content-Encoding"))) body = new GZIPInputStream(body);
      ExportTraceServiceRequest request = ExportTraceServiceRequest.parseFrom(body);
      for (ResourceSpans resource : request.getResourceSpansList()) {
        String service = attributes(resource.getResource().getAttributesList()).getOrDefault("service.name", "?");
        for (ScopeSpans scope : resource.getScopeSpansList()) {
          for (var s : scope.getSpansList()) {
            spans.add(new ReceivedSpan(service, HEX.formatHex(s.getTraceId().toByteArray()), HEX.formatHex(s.getSpanId().toByteArray()),
                HEX.formatHex(s.getParentSpanId().toByteArray()), s.getName(), s.getKind(), attributes(s.getAttributesList()),
                s.getEventsList().stream().map(e -> new ReceivedEvent(e.getName(), attributes(e.getAttributesList()))).toList()));
          }
        }
      }
      byte[] answer = ExportTraceServiceResponse.getDefaultInstance().toByteArray();
      exchange.getResponseHeaders().add("Content-Type", "application/x-protobuf");
      exchange.sendResponseHeaders(200, answer.length == 0 ? -1 : answer.length);
      if (answer.length > 0) exchange.getResponseBody().write(answer);
    }
  }

  /** Attributes as text (string values as they are, others as protobuf prints their one value). */
  private static Map<String, String> attributes(List<KeyValue> kvs) {
    return kvs.stream().collect(Collectors.toMap(KeyValue::getKey, kv -> kv.getValue().hasStringValue()
        ? kv.getValue().getStringValue() : kv.getValue().hasIntValue() ? Long.toString(kv.getValue().getIntValue())
        : kv.getValue().toString().trim(), (a, b) -> b));
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
