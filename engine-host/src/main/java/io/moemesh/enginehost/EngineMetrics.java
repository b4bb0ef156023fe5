package io.moemesh.enginehost;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.moemesh.engine.EngineStats;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.util.function.ToDoubleFunction;

/**
 * The engine's figures on {@code /q/metrics} under vLLM's names, which Kubernetes inference gateways and
 * autoscalers read (ARCHITECTURE.md, "Observability"); NaN while the model loads.
 */
@ApplicationScoped
public class EngineMetrics {
  @Inject EngineHost host;
  @Inject MeterRegistry registry;

  void register(@Observes StartupEvent event) {
    gauge("vllm:num_requests_running", "Requests in the running batch", s -> s.numRunning());
    gauge("vllm:num_requests_waiting", "Requests waiting to be scheduled (incl. those whose KV is arriving)",
        s -> s.numWaiting() + s.numLoadingKv());
    gauge("vllm:kv_cache_usage_perc", "Fraction of KV-cache pages in use (1 = full)", s -> s.kvCache().usage());
    gauge("moemesh_engine_queued_prompt_tokens", "Prompt tokens waiting to be computed", s -> s.queuedPromptTokens());
    gauge("vllm:prefix_cache_hit_rate", "Prompt tokens found in the prefix cache / prompt tokens looked up",
        s -> s.kvCache().prefixHitRate());
    counter("vllm:prompt_tokens_total", "Prompt tokens computed", s -> s.promptTokens());
    counter("vllm:generation_tokens_total", "Tokens generated", s -> s.generatedTokens());
    counter("vllm:num_preemptions_total", "Requests preempted for lack of KV pages", s -> s.preemptions());
  }

  private EngineStats stats() {
    return host.isReady() ? host.engine().stats() : null;
  }

  private void gauge(String name, String help, ToDoubleFunction<EngineStats> value) {
    Gauge.builder(name, this, m -> {
      EngineStats s = m.stats();
      return s == null ? Double.NaN : value.applyAsDouble(s);
    }).description(help).register(registry);
  }

  private void counter(String name, String help, ToDoubleFunction<EngineStats> value) {
    FunctionCounter.builder(name, this, m -> {
      EngineStats s = m.stats();
      return s == null ? 0 : value.applyAsDouble(s);
    }).description(help).register(registry);
  }
}
