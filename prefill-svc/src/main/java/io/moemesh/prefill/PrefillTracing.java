package io.moemesh.prefill;

import io.moemesh.enginehost.EngineHost;
import io.moemesh.enginehost.telemetry.EngineCallTracing;
import io.moemesh.enginehost.telemetry.GenAiAttributes;
import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.prefill.v1.PrefillGrpc;
import io.moemesh.proto.prefill.v1.PrefillRequest;
import io.moemesh.proto.prefill.v1.PrefillResponse;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.quarkus.grpc.GlobalInterceptor;
import jakarta.inject.Singleton;
import java.util.List;

/**
 * The {@code prefill {model}} span of each Prefill call: the request's id, prompt tokens and sampling; the first
 * token's usage, the ticket's object key, and {@code stop} as finish reason when the first token ended the request.
 * Its child {@code kv put} is the prompt's KV on its way to kv-store.
 */
@Singleton
@GlobalInterceptor
public class PrefillTracing extends EngineCallTracing<PrefillRequest, PrefillResponse> {
  PrefillTracing(Tracer tracer, EngineHost host) {
    super(tracer, PrefillGrpc.getPrefillMethod(), "prefill", host);
  }

  @Override
  protected void requestAttributes(PrefillRequest request, Span span) {
    span.setAttribute(GenAiAttributes.RESPONSE_ID, request.getRequestId());
    span.setAttribute(GenAiAttributes.REQUEST_TEMPERATURE, request.getSampling().getTemperature());
    if (request.getSampling().getTopP() != 0) span.setAttribute(GenAiAttributes.REQUEST_TOP_P, request.getSampling().getTopP());
    if (request.getSampling().hasSeed()) span.setAttribute(GenAiAttributes.REQUEST_SEED, request.getSampling().getSeed());
    span.setAttribute(GenAiAttributes.USAGE_INPUT_TOKENS, (long) request.getPromptTokenIdsCount());
  }

  @Override
  protected void responseAttributes(PrefillResponse last, Span span) {
    if (last.hasUsage()) {
      span.setAttribute(GenAiAttributes.USAGE_INPUT_TOKENS, (long) last.getUsage().getPromptTokens());
      span.setAttribute(GenAiAttributes.USAGE_OUTPUT_TOKENS, (long) last.getUsage().getCompletionTokens());
    }
    if (last.getFinishReason() != FinishReason.FINISH_REASON_UNSPECIFIED) {
      span.setAttribute(GenAiAttributes.RESPONSE_FINISH_REASONS, List.of(GenAiAttributes.finishReason(last.getFinishReason())));
    }
    if (last.hasTicket()) span.setAttribute(GenAiAttributes.KV_OBJECT_KEY, last.getTicket().getObjectKey());
  }
}
