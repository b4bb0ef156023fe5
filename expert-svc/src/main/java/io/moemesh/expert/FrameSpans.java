package io.moemesh.expert;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.util.List;

/**
 * A span per frame this service computes, in the trace of the engine step that sent it: the frame carries the step's
 * W3C {@code traceparent} (a stream lives for many steps of many requests, so the stream's own gRPC span says
 * nothing about one of them). SERVER kind, a child of the engine's step span; named {@value #DISPATCH} (routed) or
 * {@value #SHARED}. A frame without a valid traceparent (the step was not traced or not sampled, or a malformed value)
 * gets no span: the invalid span, whose calls cost nothing. While a traced frame computes, its span is current on the
 * compute thread ({@link #current}), so its log lines carry the trace id.
 */
@ApplicationScoped
class FrameSpans {
  static final String DISPATCH = "moemesh.expert.dispatch";
  static final String SHARED = "moemesh.expert.shared";
  static final AttributeKey<Long> LAYER_ID = AttributeKey.longKey("moemesh.expert.layer_id"); // as engine-host's ExpertRetries
  static final AttributeKey<Long> SHARD = AttributeKey.longKey("moemesh.expert.shard");
  static final AttributeKey<Long> BYTES = AttributeKey.longKey("moemesh.expert.bytes");   // the frame's serialized size
  static final AttributeKey<Long> ROWS = AttributeKey.longKey("moemesh.expert.rows");     // output rows: assignments, or tokens
  static final AttributeKey<Long> EXPERTS = AttributeKey.longKey("moemesh.expert.experts"); // routed: experts with assignments
  static final AttributeKey<Long> PLACEMENT_VERSION = AttributeKey.longKey("moemesh.expert.placement_version");

  private static final TextMapGetter<String> TRACEPARENT = new TextMapGetter<>() {
    @Override
    public Iterable<String> keys(String carrier) {
      return List.of("traceparent");
    }

    @Override
    public String get(String carrier, String key) {
      return "traceparent".equals(key) ? carrier : null;
    }
  };

  @Inject Tracer tracer;

  /** The span of a frame named {@code name} with {@code traceparent} (empty: none), started now; invalid if untraced. */
  Span start(String name, String traceparent, int layerId, int shard, long bytes) {
    if (traceparent.isEmpty()) return Span.getInvalid();
    Context parent = W3CTraceContextPropagator.getInstance().extract(Context.root(), traceparent, TRACEPARENT);
    if (!Span.fromContext(parent).getSpanContext().isValid()) return Span.getInvalid();
    var b = tracer.spanBuilder(name).setParent(parent).setSpanKind(SpanKind.SERVER).setAttribute(LAYER_ID, (long) layerId)
        .setAttribute(BYTES, bytes);
    if (shard >= 0) b.setAttribute(SHARD, (long) shard);
    return b.startSpan();
  }

  /**
   * Makes {@code span} current on this thread until the scope closes, so that what is logged meanwhile carries its trace
   * and span ids (the MDC's {@code traceId}, {@code spanId}, as in the other services' logs); for an untraced frame's
   * invalid span, nothing: no context is attached and the MDC is not touched.
   */
  static Scope current(Span span) {
    return span.getSpanContext().isValid() ? span.makeCurrent() : Scope.noop();
  }

  /** Ends {@code span} as failed with {@code why}. */
  static void failed(Span span, String why) {
    span.setStatus(StatusCode.ERROR, why);
    span.end();
  }
}
