package io.moemesh.proto.auth;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.quarkus.grpc.GlobalInterceptor;
import jakarta.inject.Singleton;
import org.jboss.logging.Logger;

/**
 * Every internal gRPC server's gate ({@link MeshAuth}): with a mesh key configured, a call without valid credentials
 * ends UNAUTHENTICATED before any service code runs; the standard health service stays open for probes. Without a
 * key every call passes, and the service says so once at startup.
 */
@Singleton // not @ApplicationScoped: a client proxy would run the constructor (and its warning) twice
@GlobalInterceptor
public class MeshAuthInterceptor implements ServerInterceptor {
  private static final Logger LOG = Logger.getLogger(MeshAuthInterceptor.class);
  private final MeshAuth auth;

  public MeshAuthInterceptor() {
    this.auth = MeshKey.configured().map(MeshAuth::new).orElse(null);
    if (auth == null) {
      LOG.warnf("internal gRPC calls are not authenticated: no mesh key (%s or %s)", MeshKey.PROPERTY, MeshKey.ENVIRONMENT);
    }
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    String method = call.getMethodDescriptor().getFullMethodName();
    if (auth == null || method.startsWith("grpc.health.v1.")) return next.startCall(call, headers);
    String refusal = auth.refusal(headers.get(MeshAuth.HEADER), method);
    if (refusal == null) return next.startCall(call, headers);
    call.close(Status.UNAUTHENTICATED.withDescription(refusal), new Metadata());
    return new ServerCall.Listener<>() {};
  }
}
