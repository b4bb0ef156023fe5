package io.moemesh.enginehost;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.moemesh.engine.Engine;
import io.moemesh.engine.EngineStats;
import io.moemesh.engine.RequestOutput;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import org.eclipse.microprofile.config.Config;
import java.time.Duration;
import java.util.function.ToDoubleFunction;

/**
 * The engine's figures on {@code /q/metrics} under vLLM's names, which Kubernetes inference gateways and
 * autoscalers read (docs/architecture.md, "Observability"); NaN while the model loads.
 */
@ApplicationScoped
public class EngineMetrics {
  @Inject EngineHost host;
  @Inject MeterRegistry registry;
  @Inject Config config;

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
    registerSpecDecode();
  }

  /**
   * Speculative decoding's counters ({@link io.moemesh.engine.SpecDecodeStats}), as vLLM names them; zero while it is
   * off. One per-position series per configured draft position, known from the configuration before the model loads.
   */
  private void registerSpecDecode() {
    counter("vllm:spec_decode_num_drafts_total", "Verifications of a request's drafts", s -> s.speculation().numDrafts());
    counter("vllm:spec_decode_num_draft_tokens_total", "Draft tokens verified", s -> s.speculation().numDraftTokens());
    counter("vllm:spec_decode_num_accepted_tokens_total", "Draft tokens accepted", s -> s.speculation().numAcceptedTokens());
    int positions = config.getOptionalValue("moemesh.engine.speculative-tokens", Integer.class).orElse(0);
    for (int i = 0; i < positions; i++) {
      int position = i;
      FunctionCounter.builder("vllm:spec_decode_num_accepted_tokens_per_pos_total", this, m -> {
        EngineStats s = m.stats();
        long[] accepted = s == null ? new long[0] : s.speculation().acceptedPerPosition();
        return position < accepted.length ? accepted[position] : 0;
      }).description("Draft tokens accepted at each draft position (0-based)").tag("position", Integer.toString(position)).register(registry);
    }
  }

  /**
   * Wraps a request's listener to time it as vLLM does: {@code vllm:time_to_first_token_seconds} (submit to
   * first token), {@code vllm:inter_token_latency_seconds} (between outputs with tokens),
   * {@code vllm:e2e_request_latency_seconds} (submit to finish) and {@code vllm:request_success_total}
   * by {@code finished_reason}. Called on the engine's step thread, like the listener.
   */
  public Engine.OutputListener timed(Engine.OutputListener listener) {
    long submitted = System.nanoTime();
    long[] last = {0};
    return output -> {
      long now = System.nanoTime();
      if (!output.newTokens().isEmpty()) {
        if (last[0] == 0) timer("vllm:time_to_first_token", "Time to the first token").record(Duration.ofNanos(now - submitted));
        else timer("vllm:inter_token_latency", "Time between tokens of a request").record(Duration.ofNanos(now - last[0]));
        last[0] = now;
      }
      if (output.finished()) finished(output, now - submitted);
      listener.onOutput(output);
    };
  }

  private void finished(RequestOutput output, long nanos) {
    timer("vllm:e2e_request_latency", "Time from submit to finish").record(Duration.ofNanos(nanos));
    Counter.builder("vllm:request_success").description("Finished requests by finish reason")
        .tag("finished_reason", output.status().finishReason()).register(registry).increment();
  }

  private Timer timer(String name, String help) {
    return Timer.builder(name).description(help).publishPercentileHistogram().register(registry);
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
