package io.moemesh.gateway;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.quarkus.grpc.GlobalInterceptor;
import jakarta.enterprise.context.ApplicationScoped;

/** Puts the call's {@code x-request-id} metadata into the gRPC context, where the fakes read it. */
@GlobalInterceptor
@ApplicationScoped
public class RequestIdCapture implements ServerInterceptor {
  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
      ServerCallHandler<Q, R> next) {
    String id = headers.get(Orchestrator.REQUEST_ID);
    return Contexts.interceptCall(Context.current().withValue(FakeMesh.REQUEST_ID, id), call, headers, next);
  }
}
