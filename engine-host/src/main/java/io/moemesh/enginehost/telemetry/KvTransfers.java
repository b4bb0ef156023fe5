package io.moemesh.enginehost.telemetry;

import io.grpc.ClientInterceptor;
import io.moemesh.enginehost.telemetry.KvTransferMetrics.Direction;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.quarkus.opentelemetry.runtime.tracing.instrumentation.grpc.GrpcTracingClientInterceptor;
import jakarta.inject.Singleton;

/**
 * Starts {@link KvTransfer}s. Their gRPC calls are traced by the interceptor Quarkus puts on its own gRPC clients
 * (a CLIENT span per call with the {@code rpc.*} attributes, W3C {@code traceparent} in the metadata): the
 * connectors' channels are plain grpc-java ones, which Quarkus does not instrument by itself.
 */
@Singleton
public class KvTransfers {
  private final Tracer tracer;
  private final KvTransferMetrics metrics;
  private final ClientInterceptor grpcTracing;

  KvTransfers(Tracer tracer, KvTransferMetrics metrics, GrpcTracingClientInterceptor grpcTracing) {
    this.tracer = tracer;
    this.metrics = metrics;
    this.grpcTracing = grpcTracing;
  }

  /** A put of object {@code key} into {@code store} ({@code host:port}), a child of the current context. */
  public KvTransfer put(String key, String store) {
    return start("kv put", Direction.SENT, key, store, Context.current());
  }

  /** A get of object {@code key} from {@code store}, a child of {@code parent} (the request's engine span). */
  public KvTransfer get(String key, String store, Context parent) {
    return start("kv get", Direction.RECEIVED, key, store, parent);
  }

  private KvTransfer start(String name, Direction direction, String key, String store, Context parent) {
    Span span = tracer.spanBuilder(name).setParent(parent).setAttribute(GenAiAttributes.KV_OBJECT_KEY, key)
        .setAttribute(GenAiAttributes.KV_STORE, store).startSpan();
    return new KvTransfer(span, new ChildCalls(grpcTracing, parent.with(span)), direction, metrics);
  }
}
