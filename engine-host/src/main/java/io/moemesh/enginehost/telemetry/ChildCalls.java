package io.moemesh.enginehost.telemetry;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.MethodDescriptor;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;

/**
 * Runs a tracing client interceptor with a fixed parent: KV calls start on threads where the request's context is
 * not current (the engine's step thread, gRPC callbacks), so the parent is given instead of looked up.
 */
record ChildCalls(ClientInterceptor tracing, Context parent) implements ClientInterceptor {
  @Override
  public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
    try (Scope ignored = parent.makeCurrent()) {
      return tracing.interceptCall(method, options, next);
    }
  }
}
