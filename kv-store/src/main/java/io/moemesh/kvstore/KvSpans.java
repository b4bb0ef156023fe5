package io.moemesh.kvstore;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;

/**
 * What kv-store adds to the gRPC server spans of Put and Get, which Quarkus' gRPC instrumentation makes in the
 * caller's trace (the W3C context comes in the call's metadata): the object's key, its bytes and a put's outcome.
 * The names are the engine services' ({@code moemesh.kv.*}), so one query finds both sides of a transfer.
 */
final class KvSpans {
  static final AttributeKey<String> OBJECT_KEY = AttributeKey.stringKey("moemesh.kv.object_key");
  static final AttributeKey<Long> BYTES = AttributeKey.longKey("moemesh.kv.bytes");
  /** {@code committed}, {@code revoked} or {@code failed}. */
  static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("moemesh.kv.outcome");

  private KvSpans() {}

  /** The call's server span: current while grpc-java runs the service method (a no-op span outside a trace). */
  static Span ofCall() {
    return Span.current();
  }
}
