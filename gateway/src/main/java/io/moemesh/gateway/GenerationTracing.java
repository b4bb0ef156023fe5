package io.moemesh.gateway;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.MethodDescriptor;
import io.moemesh.model.sampling.SamplingParams;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.quarkus.opentelemetry.runtime.tracing.instrumentation.grpc.GrpcTracingClientInterceptor;
import jakarta.inject.Singleton;

/**
 * Starts each request's {@link GenerationSpan}. The backend calls go over plain grpc-java channels, which Quarkus
 * does not instrument by itself, so each call is traced by the interceptor Quarkus puts on its own clients (a CLIENT
 * span with the {@code rpc.*} attributes, W3C {@code traceparent} in the metadata) run with the request's span as
 * the parent: the decode leg starts on a gRPC thread, where that span is not current.
 */
@Singleton
public class GenerationTracing {
  private final Tracer tracer;
  private final ClientInterceptor grpcTracing;

  GenerationTracing(Tracer tracer, GrpcTracingClientInterceptor grpcTracing) {
    this.tracer = tracer;
    this.grpcTracing = grpcTracing;
  }

  /** The span of a prepared request, a child of {@code parent} (the HTTP server span's context). */
  GenerationSpan start(Context parent, PreparedRequest prepared, RequestIds.Ids ids, String servedModel) {
    GenerationRequest r = prepared.request();
    String operation = r.endpoint() == GenerationRequest.Endpoint.CHAT ? "chat" : "text_completion";
    SamplingParams sampling = r.sampling();
    var builder = tracer.spanBuilder(operation + " " + r.model()).setParent(parent)
        .setAttribute(GenerationSpan.OPERATION_NAME, operation)
        .setAttribute(GenerationSpan.PROVIDER_NAME, "moemesh")
        .setAttribute(GenerationSpan.REQUEST_MODEL, r.model())
        .setAttribute(GenerationSpan.RESPONSE_MODEL, servedModel)
        .setAttribute(GenerationSpan.RESPONSE_ID, ids.meshId())
        .setAttribute(GenerationSpan.CLIENT_REQUEST_ID, ids.correlationId())
        .setAttribute(GenerationSpan.REQUEST_TEMPERATURE, sampling.temperature())
        .setAttribute(GenerationSpan.REQUEST_TOP_P, sampling.topP())
        .setAttribute(GenerationSpan.USAGE_INPUT_TOKENS, (long) prepared.promptTokens());
    if (r.maxTokens() != null) builder.setAttribute(GenerationSpan.REQUEST_MAX_TOKENS, (long) r.maxTokens());
    if (sampling.seed() != null) builder.setAttribute(GenerationSpan.REQUEST_SEED, sampling.seed());
    if (r.n() != 1) builder.setAttribute(GenerationSpan.REQUEST_CHOICE_COUNT, (long) r.n());
    Span span = builder.startSpan();
    return new GenerationSpan(span, new ChildCalls(grpcTracing, parent.with(span)), prepared.numChoices());
  }

  /** Runs a tracing client interceptor with a fixed parent, whatever the thread's current context. */
  private record ChildCalls(ClientInterceptor tracing, Context parent) implements ClientInterceptor {
    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
      try (Scope ignored = parent.makeCurrent()) {
        return tracing.interceptCall(method, options, next);
      }
    }
  }
}
