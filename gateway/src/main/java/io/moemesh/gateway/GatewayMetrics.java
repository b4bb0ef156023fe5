package io.moemesh.gateway;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import jakarta.inject.Singleton;
import java.time.Duration;
import java.util.Locale;

/**
 * The gateway's meters on {@code /q/metrics}: {@code moemesh_gateway_requests_total{endpoint,status}} (status 499 =
 * the client left), {@code moemesh_gateway_time_to_first_token_seconds} and
 * {@code moemesh_gateway_e2e_request_latency_seconds} (histograms), {@code moemesh_gateway_prompt_tokens_total} and
 * {@code moemesh_gateway_generation_tokens_total}; for cache-aware prefill routing
 * {@code moemesh_gateway_prefill_routed_total{reason="prefix|load"}} and {@code moemesh_gateway_prefill_prefix_tokens_total};
 * for admission {@code moemesh_gateway_queued_prompt_tokens} and {@code moemesh_gateway_prompt_tokens_per_second}
 * (the rate the queue's wait is predicted with; NaN until measured); for mid-stream migration
 * {@code moemesh_gateway_migrations_total{reason="drain|unavailable|incomplete"}} and
 * {@code moemesh_gateway_migration_resume_seconds} (a replica lost to the continuation's first token, a histogram).
 */
@Singleton
public class GatewayMetrics {
  private final MeterRegistry registry;
  private final Timer timeToFirstToken;
  private final Timer e2eLatency;
  private final Counter promptTokens;
  private final Counter generationTokens;
  private final Counter prefixTokens;
  private final Timer migrationResume;

  GatewayMetrics(MeterRegistry registry) {
    this.registry = registry;
    this.timeToFirstToken = Timer.builder("moemesh.gateway.time.to.first.token")
        .description("Request arrival to the first generated token").publishPercentileHistogram()
        .register(registry);
    this.e2eLatency = Timer.builder("moemesh.gateway.e2e.request.latency")
        .description("Request arrival to the end of the response").publishPercentileHistogram().register(registry);
    this.promptTokens = Counter.builder("moemesh.gateway.prompt.tokens").description("Prompt tokens of served requests")
        .register(registry);
    this.generationTokens = Counter.builder("moemesh.gateway.generation.tokens")
        .description("Tokens generated for served requests").register(registry);
    this.prefixTokens = Counter.builder("moemesh.gateway.prefill.prefix.tokens")
        .description("Prompt tokens sent to a prefill replica believed to hold them in its prefix cache").register(registry);
    this.migrationResume = Timer.builder("moemesh.gateway.migration.resume")
        .description("A decode replica lost mid-stream to the first token of the continuation on another").publishPercentileHistogram()
        .register(registry);
  }

  /** A choice moves to another decode replica mid-stream. */
  void migrated(MigrationReason reason) {
    Counter.builder("moemesh.gateway.migrations").description("Generations continued on another decode replica mid-stream, by reason")
        .tag("reason", reason.label()).register(registry).increment();
  }

  /** A migrated choice's first token from its new replica, {@code sinceLoss} after the old one failed. */
  void resumed(Duration sinceLoss) {
    migrationResume.record(sinceLoss);
  }

  void requestEnded(GenerationRequest.Endpoint endpoint, int status, Duration latency) {
    Counter.builder("moemesh.gateway.requests").description("Generation requests by endpoint and HTTP status")
        .tag("endpoint", endpoint.name().toLowerCase(Locale.ROOT)).tag("status", Integer.toString(status))
        .register(registry).increment();
    e2eLatency.record(latency);
  }

  void firstToken(Duration sinceArrival) {
    timeToFirstToken.record(sinceArrival);
  }

  /** A prefill leg routed: by prefix or by load, and the prompt tokens the replica is believed to hold already. */
  void prefillRouted(PrefixAffinity.Choice choice) {
    Counter.builder("moemesh.gateway.prefill.routed").description("Prefill legs by routing reason (prefix: its longest known prefix; load: least queued)")
        .tag("reason", choice.reason().name().toLowerCase(Locale.ROOT)).register(registry).increment();
    prefixTokens.increment(choice.matchedTokens());
  }

  void promptQueue(PromptQueue queue) {
    io.micrometer.core.instrument.Gauge.builder("moemesh.gateway.queued.prompt.tokens", queue, PromptQueue::queuedTokens)
        .description("Prompt tokens admitted and not yet computed (a choice leaves with its first token)").register(registry);
    io.micrometer.core.instrument.Gauge.builder("moemesh.gateway.prompt.tokens.per.second", queue, PromptQueue::rate)
        .description("Prompt tokens the mesh computes per second while any are queued (over its last 30 s of busy time)").register(registry);
  }

  void tokens(int prompt, int generated) {
    promptTokens.increment(prompt);
    generationTokens.increment(generated);
  }
}
