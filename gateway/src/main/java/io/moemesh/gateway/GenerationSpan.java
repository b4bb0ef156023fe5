package io.moemesh.gateway;

import io.grpc.ClientInterceptor;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.StatusCode;
import io.smallrye.mutiny.Multi;
import java.util.ArrayList;
import java.util.List;

/**
 * The gateway's span of one generation request, after the OpenTelemetry GenAI semantic conventions
 * (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/): named {@code "{gen_ai.operation.name}
 * {gen_ai.request.model}"} ({@code chat tiny}, {@code text_completion tiny}), a child of the HTTP server span (which
 * honours the client's {@code traceparent}), and the parent of every prefill and decode call of the request through
 * {@link #calls()}. It ends with the response stream: the finish reason of each choice, the token usage, and an
 * error status if the request failed or the client left. Events are only folded in as they pass: no span per token.
 */
final class GenerationSpan {
  static final AttributeKey<String> OPERATION_NAME = AttributeKey.stringKey("gen_ai.operation.name");
  static final AttributeKey<String> PROVIDER_NAME = AttributeKey.stringKey("gen_ai.provider.name");
  static final AttributeKey<String> REQUEST_MODEL = AttributeKey.stringKey("gen_ai.request.model");
  static final AttributeKey<Long> REQUEST_MAX_TOKENS = AttributeKey.longKey("gen_ai.request.max_tokens");
  static final AttributeKey<Double> REQUEST_TEMPERATURE = AttributeKey.doubleKey("gen_ai.request.temperature");
  static final AttributeKey<Double> REQUEST_TOP_P = AttributeKey.doubleKey("gen_ai.request.top_p");
  static final AttributeKey<Long> REQUEST_SEED = AttributeKey.longKey("gen_ai.request.seed");
  static final AttributeKey<Long> REQUEST_CHOICE_COUNT = AttributeKey.longKey("gen_ai.request.choice.count");
  static final AttributeKey<String> RESPONSE_ID = AttributeKey.stringKey("gen_ai.response.id");
  /** The client's {@code X-Request-Id} (or the response id when it gave none): the id its logs know the request by. */
  static final AttributeKey<String> CLIENT_REQUEST_ID = AttributeKey.stringKey("moemesh.client_request_id");
  static final AttributeKey<String> RESPONSE_MODEL = AttributeKey.stringKey("gen_ai.response.model");
  static final AttributeKey<List<String>> RESPONSE_FINISH_REASONS = AttributeKey.stringArrayKey("gen_ai.response.finish_reasons");
  static final AttributeKey<Long> USAGE_INPUT_TOKENS = AttributeKey.longKey("gen_ai.usage.input_tokens");
  static final AttributeKey<Long> USAGE_OUTPUT_TOKENS = AttributeKey.longKey("gen_ai.usage.output_tokens");
  static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");
  /** Choices moved to another decode replica mid-stream (set when any did; each one is also an event). */
  static final AttributeKey<Long> MIGRATIONS = AttributeKey.longKey("moemesh.migrations");
  static final AttributeKey<String> MIGRATION_REASON = AttributeKey.stringKey("moemesh.migration.reason");
  static final AttributeKey<Long> MIGRATION_TOKENS = AttributeKey.longKey("moemesh.migration.tokens_delivered");
  static final AttributeKey<String> MIGRATION_RPC_ID = AttributeKey.stringKey("moemesh.migration.request_id");

  private final Span span;
  private final ClientInterceptor calls;
  private final String[] finishReasons; // per choice; written as events pass (serialized by the Multi)
  private long outputTokens;
  private final java.util.concurrent.atomic.AtomicLong migrations = new java.util.concurrent.atomic.AtomicLong();

  GenerationSpan(Span span, ClientInterceptor calls, int numChoices) {
    this.span = span;
    this.calls = calls;
    this.finishReasons = new String[numChoices];
  }

  /** Traces a backend call as a child of this span (a CLIENT span whose W3C context travels in the metadata). */
  ClientInterceptor calls() {
    return calls;
  }

  /** A choice continues on another decode replica: an event {@code moemesh.migration} with why and after how many tokens. */
  BackendCall.Migrations migrations() {
    return (rpcId, reason, numDelivered) -> {
      migrations.incrementAndGet();
      span.addEvent("moemesh.migration", io.opentelemetry.api.common.Attributes.of(MIGRATION_REASON, reason.label(),
          MIGRATION_TOKENS, (long) numDelivered, MIGRATION_RPC_ID, rpcId));
    };
  }

  /** The request's events, with this span ended when they end (completed, failed, or cancelled by a leaving client). */
  Multi<ChoiceEvent> observe(Multi<ChoiceEvent> events) {
    return events.onItem().invoke(this::record).onTermination().invoke(this::end);
  }

  private void record(ChoiceEvent e) {
    outputTokens += e.numTokens();
    if (e.finished()) finishReasons[e.index()] = e.finishReason();
  }

  private void end(Throwable failure, boolean cancelled) {
    List<String> reasons = new ArrayList<>();
    for (String r : finishReasons) if (r != null) reasons.add(r);
    if (!reasons.isEmpty()) span.setAttribute(RESPONSE_FINISH_REASONS, reasons);
    span.setAttribute(USAGE_OUTPUT_TOKENS, outputTokens);
    if (migrations.get() > 0) span.setAttribute(MIGRATIONS, migrations.get());
    if (failure != null) {
      span.setStatus(StatusCode.ERROR, String.valueOf(failure.getMessage()));
      span.setAttribute(ERROR_TYPE, failure.getClass().getName());
    } else if (cancelled) {
      span.setStatus(StatusCode.ERROR, "the client left before the response ended");
      span.setAttribute(ERROR_TYPE, "cancelled");
    }
    span.end();
  }
}
