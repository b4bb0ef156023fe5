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
 * thread while the model runs. Its traffic with each expert service is a child span ({@link ExpertStepSpans}), whose W3C
 * context the frames carry, so the services' spans of the step are its children: gateway → decode → step → experts
 * dispatch → expert shard in one trace. A step of
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
    var experts = new ExpertStepSpans(tracer);
    Scope scope = experts.into(parent.with(span)).makeCurrent();
    return new Step() {
      @Override
      public void failed(RuntimeException failure) {
        span.setStatus(StatusCode.ERROR, String.valueOf(failure.getMessage()));
      }

      @Override
      public void close() {
        scope.close();
        experts.end();
        span.end();
      }
    };
  }
}
