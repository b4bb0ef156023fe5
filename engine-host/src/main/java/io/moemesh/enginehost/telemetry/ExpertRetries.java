package io.moemesh.enginehost.telemetry;

import io.micrometer.core.instrument.MeterRegistry;
import io.moemesh.engine.experts.DispatchingExperts;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import jakarta.inject.Singleton;

/**
 * Remote experts' retries in metrics and traces: a span {@code experts redispatch} for each round of assignments sent
 * again after a routed shard failed (attributes: layer, assignments, why), and {@code experts step failed} (status
 * ERROR) for a step that gave up at its deadline. Counters: {@code moemesh_expert_redispatched_assignments_total},
 * {@code moemesh_expert_step_failures_total}.
 */
@Singleton
public class ExpertRetries implements DispatchingExperts.RetryListener {
  private final Tracer tracer;
  private final MeterRegistry registry;

  ExpertRetries(Tracer tracer, MeterRegistry registry) {
    this.tracer = tracer;
    this.registry = registry;
    registry.counter("moemesh_expert_redispatched_assignments_total");
    registry.counter("moemesh_expert_step_failures_total");
  }

  @Override
  public void redispatched(int layerId, int assignments, String why) {
    registry.counter("moemesh_expert_redispatched_assignments_total").increment(assignments);
    Span span = tracer.spanBuilder("experts redispatch").setAttribute("moemesh.expert.layer_id", layerId)
        .setAttribute("moemesh.expert.assignments", assignments).setAttribute("moemesh.expert.retry_reason", why).startSpan();
    span.end();
  }

  @Override
  public void stepFailed(String why) {
    registry.counter("moemesh_expert_step_failures_total").increment();
    Span span = tracer.spanBuilder("experts step failed").setAttribute("moemesh.expert.retry_reason", why).startSpan();
    span.setStatus(StatusCode.ERROR, why);
    span.end();
  }
}
