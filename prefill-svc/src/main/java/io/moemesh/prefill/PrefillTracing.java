package io.moemesh.prefill;

import io.moemesh.enginehost.EngineHost;
import io.moemesh.enginehost.telemetry.EngineCallTracing;
import io.moemesh.enginehost.telemetry.GenAiAttributes;
import io.moemesh.enginehost.telemetry.StepTracing;
import io.moemesh.proto.prefill.v1.PrefillGrpc;
import io.moemesh.proto.prefill.v1.PrefillRequest;
import io.moemesh.proto.prefill.v1.PrefillResponse;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.quarkus.grpc.GlobalInterceptor;
import jakarta.inject.Singleton;

/**
 * The {@code prefill {model}} span of each Prefill call: the request's id, prompt tokens and sampling; the first
 * token's usage, the ticket's object key, and {@code stop} as finish reason when the first token ended the request.
 * Its child {@code kv put} is the prompt's KV on its way to kv-store.
 */
@Singleton
@GlobalInterceptor
public class PrefillTracing extends EngineCallTracing<PrefillRequest, PrefillResponse> {
  PrefillTracing(Tracer tracer, EngineHost host, StepTracing steps) {
    super(tracer, PrefillGrpc.getPrefillMethod(), "prefill", host::modelName, steps);
  }

  @Override
  protected String requestId(PrefillRequest request) {
    return request.getRequestId();
  }

  @Override
  protected void requestAttributes(PrefillRequest request, Span span) {
    requestAttributes(request.getRequestId(), request.getSampling(), request.getPromptTokenIdsCount(), span);
  }

  @Override
  protected void responseAttributes(PrefillResponse last, Span span) {
    outcomeAttributes(last.hasUsage() ? last.getUsage() : null, last.getFinishReason(), span);
    if (last.hasTicket()) span.setAttribute(GenAiAttributes.KV_OBJECT_KEY, last.getTicket().getObjectKey());
  }
}
