package io.moemesh.gateway;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.quarkus.grpc.GlobalInterceptor;
import jakarta.enterprise.context.ApplicationScoped;

/**
 * Puts the call's {@code x-request-id} and {@code traceparent} metadata, and the authority it was sent to (which of
 * the configured replica addresses, all served by this app), into the gRPC context for the fakes.
 */
@GlobalInterceptor
@ApplicationScoped
public class RequestIdCapture implements ServerInterceptor {
  static final Metadata.Key<String> TRACE_PARENT = Metadata.Key.of("traceparent", Metadata.ASCII_STRING_MARSHALLER);

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
      ServerCallHandler<Q, R> next) {
    String id = headers.get(Orchestrator.REQUEST_ID);
    Context context = Context.current().withValue(FakeMesh.REQUEST_ID, id)
        .withValue(FakeMesh.TRACE_PARENT, headers.get(TRACE_PARENT)).withValue(FakeMesh.AUTHORITY, call.getAuthority());
    return Contexts.interceptCall(context, call, headers, next);
  }
}
