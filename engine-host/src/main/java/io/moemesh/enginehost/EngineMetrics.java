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
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

/**
 * The engine's figures on {@code /q/metrics} under vLLM's names, labels ({@code model_name}) and histogram buckets,
 * which vLLM's dashboards, Kubernetes inference gateways and autoscalers read (docs/architecture.md,
 * "Observability"); NaN while the model loads.
 */
@ApplicationScoped
public class EngineMetrics {
  /** vLLM's buckets (vllm/v1/metrics): time to first token well past 30 s, inter-token latency, end to end. */
  private static final double[] TTFT_BUCKETS = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
      7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
  private static final double[] ITL_BUCKETS = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
      10.0, 20.0, 40.0, 80.0};
  private static final double[] E2E_BUCKETS = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
      120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

  /**
   * What of a request this replica counts, so that the disaggregated mesh counts each request once: the prefill
   * replica its first token (time to first token, and the end of a request that ends there), the decode replica the
   * rest (inter-token latency, end to end from its arrival, finish reason); an engine that runs the whole request
   * counts everything. A request of one token (max_tokens 1) ends at the hand-over and is counted by the gateway only.
   */
  public enum Leg { WHOLE, FIRST_TOKEN, AFTER_FIRST_TOKEN }

  @Inject EngineHost host;
  @Inject MeterRegistry registry;
  @Inject EngineConfig config;
  private String modelName;
  private volatile boolean cacheConfigRegistered;
  // built once: a meter's builder and the registry's lookup cost more than the record on every token
  private Timer timeToFirstToken, interTokenLatency, requestLatency;
  private final java.util.Map<String, Counter> successByReason = new java.util.concurrent.ConcurrentHashMap<>();

  void register(@Observes StartupEvent event) {
    // the checkpoint directory's name, as the engine's spans and prefix hashes name the model (DeepseekModel.modelId)
    java.nio.file.Path name = config.modelDir().getFileName();
    modelName = name == null ? "unknown" : name.toString();
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
    counter("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache", s -> s.kvCache().queriedTokens());
    counter("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache", s -> s.kvCache().hitTokens());
    registerSpecDecode();
    timeToFirstToken = timer("vllm:time_to_first_token", "Time to the first token", TTFT_BUCKETS);
    interTokenLatency = timer("vllm:inter_token_latency", "Time between tokens of a request", ITL_BUCKETS);
    requestLatency = timer("vllm:e2e_request_latency", "Time from submit to finish", E2E_BUCKETS);
  }

  /**
   * Speculative decoding's counters ({@link io.moemesh.engine.SpecDecodeStats}), as vLLM names them; zero while it is
   * off. One per-position series per configured draft position, known from the configuration before the model loads.
   */
  private void registerSpecDecode() {
    counter("vllm:spec_decode_num_drafts_total", "Verifications of a request's drafts", s -> s.speculation().numDrafts());
    counter("vllm:spec_decode_num_draft_tokens_total", "Draft tokens verified", s -> s.speculation().numDraftTokens());
    counter("vllm:spec_decode_num_accepted_tokens_total", "Draft tokens accepted", s -> s.speculation().numAcceptedTokens());
    int positions = config.speculativeTokens();
    for (int i = 0; i < positions; i++) {
      int position = i;
      FunctionCounter.builder("vllm:spec_decode_num_accepted_tokens_per_pos_total", this, m -> {
        EngineStats s = m.stats();
        long[] accepted = s == null ? new long[0] : s.speculation().acceptedPerPosition();
        return position < accepted.length ? accepted[position] : 0;
      }).description("Draft tokens accepted at each draft position (0-based)").tag("model_name", modelName)
          .tag("position", Integer.toString(position)).register(registry);
    }
  }

  /**
   * Wraps a request's listener to time it as vLLM does: {@code vllm:time_to_first_token_seconds} (submit to
   * first token), {@code vllm:inter_token_latency_seconds} (between outputs with tokens),
   * {@code vllm:e2e_request_latency_seconds} (submit to finish) and {@code vllm:request_success_total}
   * by {@code finished_reason}, each only where {@code leg} counts it. Called on the engine's step thread, like the listener.
   */
  public Engine.OutputListener timed(Engine.OutputListener listener, Leg leg) {
    long submitted = System.nanoTime();
    long[] last = {0};
    return output -> {
      long now = System.nanoTime();
      if (!output.newTokens().isEmpty()) {
        if (last[0] == 0) {
          if (leg != Leg.AFTER_FIRST_TOKEN) timeToFirstToken.record(now - submitted, TimeUnit.NANOSECONDS);
        } else if (leg != Leg.FIRST_TOKEN) {
          interTokenLatency.record(now - last[0], TimeUnit.NANOSECONDS);
        }
        last[0] = now;
      }
      // a prefill's "length" is the hand-over to decode, which counts the request's end; a stop, an abort or an error
      // at the first token ends the request here
      if (output.finished() && !(leg == Leg.FIRST_TOKEN && output.status().finishReason().equals("length"))) finished(output, now - submitted);
      listener.onOutput(output);
    };
  }

  private void finished(RequestOutput output, long nanos) {
    requestLatency.record(nanos, TimeUnit.NANOSECONDS);
    successByReason.computeIfAbsent(output.status().finishReason(), reason -> Counter.builder("vllm:request_success")
        .description("Finished requests by finish reason").tag("model_name", modelName).tag("finished_reason", reason)
        .register(registry)).increment();
  }

  private Timer timer(String name, String help, double[] bucketsSeconds) {
    Duration[] buckets = new Duration[bucketsSeconds.length];
    for (int i = 0; i < buckets.length; i++) buckets[i] = Duration.ofNanos(Math.round(bucketsSeconds[i] * 1e9));
    return Timer.builder(name).description(help).tag("model_name", modelName).serviceLevelObjectives(buckets).register(registry);
  }

  private EngineStats stats() {
    if (!host.isReady()) return null;
    EngineStats s = host.engine().stats();
    if (!cacheConfigRegistered) registerCacheConfig(s);
    return s;
  }

  /** {@code vllm:cache_config_info}: the KV cache's shape as labels, value 1; known once the model has loaded. */
  private synchronized void registerCacheConfig(EngineStats s) {
    if (cacheConfigRegistered) return;
    Gauge.builder("vllm:cache_config_info", () -> 1).description("The KV cache's configuration (labels), 1").tag("model_name", modelName)
        .tag("block_size", Integer.toString(s.kvCache().pageSize())).tag("num_gpu_blocks", Integer.toString(s.kvCache().numPages()))
        .tag("cache_dtype", host.loaded().model().precision().kvCacheDType().name().toLowerCase(java.util.Locale.ROOT)).register(registry);
    cacheConfigRegistered = true;
  }

  private void gauge(String name, String help, ToDoubleFunction<EngineStats> value) {
    Gauge.builder(name, this, m -> {
      EngineStats s = m.stats();
      return s == null ? Double.NaN : value.applyAsDouble(s);
    }).description(help).tag("model_name", modelName).register(registry);
  }

  private void counter(String name, String help, ToDoubleFunction<EngineStats> value) {
    FunctionCounter.builder(name, this, m -> {
      EngineStats s = m.stats();
      return s == null ? 0 : value.applyAsDouble(s);
    }).description(help).tag("model_name", modelName).register(registry);
  }
}
