package io.moemesh.gateway;

import io.grpc.ClientInterceptor;
import io.moemesh.proto.common.v1.SamplingParams;

/**
 * One choice's generation as the mesh sees it.
 *
 * @param requestId the client-visible request id, sent as {@code x-request-id} metadata on every RPC
 * @param rpcId the RPC's {@code request_id}: the request id itself, or {@code <id>-<choice>} when n > 1
 * @param tracing traces each RPC as a child of the request's span (W3C {@code traceparent} in the metadata)
 * @param maxTokens the completion budget, the prefill's first token included
 */
record BackendCall(String requestId, String rpcId, ClientInterceptor tracing, int[] promptIds, SamplingParams sampling,
    int maxTokens) {}
