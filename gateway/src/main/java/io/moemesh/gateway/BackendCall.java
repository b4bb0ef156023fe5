package io.moemesh.gateway;

import io.grpc.ClientInterceptor;
import io.moemesh.proto.common.v1.SamplingParams;

/**
 * One choice's generation as the mesh sees it.
 *
 * @param correlationId the client's {@code X-Request-Id} (or the mesh id), sent as {@code x-request-id} metadata on
 *     every RPC, for logs and traces only
 * @param rpcId the RPC's {@code request_id} (and KV object key): the mesh id, or {@code <id>-<choice>} when n > 1
 * @param tracing traces each RPC as a child of the request's span (W3C {@code traceparent} in the metadata)
 * @param maxTokens the completion budget, the prefill's first token included
 * @param migrations told when the choice moves to another decode replica mid-stream (the request's span)
 */
record BackendCall(String correlationId, String rpcId, ClientInterceptor tracing, int[] promptIds, SamplingParams sampling,
    int maxTokens, Migrations migrations) {

  /** Hears of a choice's migrations. */
  interface Migrations {
    Migrations NONE = (rpcId, reason, numDelivered) -> {};

    /** The choice {@code rpcId} continues on another replica after {@code numDelivered} tokens. */
    void migrated(String rpcId, MigrationReason reason, int numDelivered);
  }
}
