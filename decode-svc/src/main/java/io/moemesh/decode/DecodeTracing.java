package io.moemesh.decode;

import io.moemesh.enginehost.EngineHost;
import io.moemesh.enginehost.telemetry.EngineCallTracing;
import io.moemesh.enginehost.telemetry.GenAiAttributes;
import io.moemesh.enginehost.telemetry.StepTracing;
import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.decode.v1.DecodeGrpc;
import io.moemesh.proto.decode.v1.GenerateRequest;
import io.moemesh.proto.decode.v1.GenerateResponse;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.quarkus.grpc.GlobalInterceptor;
import jakarta.inject.Singleton;

/**
 * The {@code decode {model}} span of each Generate call: the request's id, prompt tokens, budget and sampling (and
 * the ticket's object key when the KV comes from a prefill); at the end the finish reason and the usage of the last
 * response (an ERROR status when the request failed). Its child {@code kv get} is the prompt's KV on its way from kv-store. One span per call, none per token.
 */
@Singleton
@GlobalInterceptor
public class DecodeTracing extends EngineCallTracing<GenerateRequest, GenerateResponse> {
  DecodeTracing(Tracer tracer, EngineHost host, StepTracing steps) {
    super(tracer, DecodeGrpc.getGenerateMethod(), "decode", host::modelName, steps);
  }

  @Override
  protected String requestId(GenerateRequest request) {
    return request.getRequestId();
  }

  @Override
  protected void requestAttributes(GenerateRequest request, Span span) {
    requestAttributes(request.getRequestId(), request.getSampling(), request.getPromptTokenIdsCount(), span);
    span.setAttribute(GenAiAttributes.REQUEST_MAX_TOKENS, (long) request.getMaxTokens());
    if (request.hasTicket()) span.setAttribute(GenAiAttributes.KV_OBJECT_KEY, request.getTicket().getObjectKey());
  }

  @Override
  protected void responseAttributes(GenerateResponse last, Span span) {
    outcomeAttributes(last.hasUsage() ? last.getUsage() : null, last.getFinishReason(), span);
    if (last.getFinishReason() == FinishReason.FINISH_REASON_ERROR) span.setStatus(StatusCode.ERROR, last.getError());
  }
}
