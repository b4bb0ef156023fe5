package io.moemesh.enginehost.telemetry;

import io.moemesh.engine.ScheduledChunk;
import io.moemesh.engine.SchedulerOutput;
import io.moemesh.engine.StepObserver;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import jakarta.inject.Singleton;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The span {@value #NAME} of an engine step whose MoE layers call expert services (installed only then,
 * {@code EngineHost}): a child of the engine span of the step's first traced request ({@link EngineCallTracing}
 * registers each request's context here while its call lasts), linked to those of the others, current on the step
 * thread while the model runs. So the frames sent to expert services carry its W3C context ({@link #traceparent}) and
 * their spans on the shards are its children: gateway → decode → step → expert shards in one trace. A step of
 * untraced or unsampled requests makes no span, and its frames carry no context.
 */
@Singleton
public class StepTracing implements StepObserver {
  public static final String NAME = "engine step";
  public static final AttributeKey<Long> REQUESTS = AttributeKey.longKey("moemesh.engine.step.requests");
  public static final AttributeKey<Long> TOKENS = AttributeKey.longKey("moemesh.engine.step.tokens");
  private final Tracer tracer;
  private final Map<String, Context> requestIdToContext = new ConcurrentHashMap<>();

  StepTracing(Tracer tracer) {
    this.tracer = tracer;
  }

  /** Request {@code requestId}'s engine span, in {@code context}, parents the steps it runs in until {@link #ended}. */
  void started(String requestId, Context context) {
    requestIdToContext.put(requestId, context);
  }

  void ended(String requestId, Context context) {
    requestIdToContext.remove(requestId, context);
  }

  @Override
  public Step begin(SchedulerOutput plan) {
    Context parent = null;
    var builder = tracer.spanBuilder(NAME);
    for (ScheduledChunk chunk : plan.chunks()) {
      Context c = requestIdToContext.get(chunk.requestId());
      if (c == null) continue;
      SpanContext request = Span.fromContext(c).getSpanContext();
      if (!request.isSampled()) continue;
      if (parent == null) parent = c;
      else builder.addLink(request);
    }
    if (parent == null) return Step.NONE;
    Span span = builder.setParent(parent).setAttribute(REQUESTS, (long) plan.chunks().size())
        .setAttribute(TOKENS, (long) plan.numScheduledTokens()).startSpan();
    Scope scope = parent.with(span).makeCurrent();
    return new Step() {
      @Override
      public void failed(RuntimeException failure) {
        span.setStatus(StatusCode.ERROR, String.valueOf(failure.getMessage()));
      }

      @Override
      public void close() {
        scope.close();
        span.end();
      }
    };
  }

  /**
   * The W3C {@code traceparent} of the current span ({@code 00-<trace id>-<span id>-01}) for a frame to an expert
   * service, or "" when there is none or it is not sampled (the shard then makes no span).
   */
  public static String traceparent() {
    SpanContext c = Span.current().getSpanContext();
    if (!c.isValid() || !c.isSampled()) return "";
    return "00-" + c.getTraceId() + "-" + c.getSpanId() + "-01";
  }
}
