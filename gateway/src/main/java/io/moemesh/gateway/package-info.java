/**
 * gateway: the OpenAI-compatible HTTP API of the mesh.
 *
 * <p><b>A request's life</b>, written down once:
 * <pre>
 *   HTTP POST ─▶ {@link io.moemesh.gateway.OpenAiRoutes}: API key, the mesh's own request id, admission (429 when
 *                every decode replica reports its KV cache nearly full or over max-in-flight, 503 without a
 *                reachable decode replica)
 *   worker    ─▶ {@link io.moemesh.gateway.RequestParser} (400 naming the field; sampling ranges and messages from
 *                the model's SamplingParams) ─▶ {@link io.moemesh.gateway.Preparer} (404 for another model, chat
 *                template, tokenization, prompt + max_tokens against the context) ─▶ {@link io.moemesh.gateway.PromptQueue}
 *                (429 when the prompts would wait beyond max-queue-wait)
 *   mesh      ─▶ {@link io.moemesh.gateway.Generations}: one {@link io.moemesh.gateway.BackendCall} per choice
 *                (n × prompts), merged ─▶ {@link io.moemesh.gateway.Orchestrator}: Prefill on the prefill replica
 *                most likely to hold the prompt's prefix (unless it is far more loaded: PrefixAffinity), its first
 *                token downstream at once, then Generate with the KV ticket on the less loaded of two random
 *                decode replicas (or Generate alone without disaggregation); a decode replica lost mid-stream (died,
 *                drained) and the choice continues from prompt + delivered tokens on another ({@link io.moemesh.gateway.ChoiceProgress})
 *   gRPC threads ─▶ {@link io.moemesh.gateway.ChoiceDecoder}: incremental detokenization, stop strings
 *                ({@link io.moemesh.gateway.StopMatcher}), logprobs, finish reason
 *   event loop ─▶ {@link io.moemesh.gateway.ResponseWriter}: SSE chunks or one JSON body, usage, [DONE]
 * </pre>
 * A JSON answer's status line goes out with the answer, so anything failing is a proper HTTP error; a stream's goes
 * out once the request is admitted (then SSE keep-alives), and a failure ends the stream with an OpenAI error event. A closed connection, a stop string or a failed sibling
 * choice cancels the open gRPC calls ({@link io.moemesh.gateway.GrpcCalls}), so the backends abort.
 *
 * <p><b>Threads</b>: Vert.x event loops only parse HTTP and write bytes. Parsing, the chat template and
 * tokenization run on the Vert.x worker pool; detokenization runs on grpc-java's callback threads; the load
 * poller ({@link io.moemesh.gateway.Replicas}) has its own thread and calls every replica's {@code Load} every
 * {@code load-poll-interval}.
 */
package io.moemesh.gateway;
