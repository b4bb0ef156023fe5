package io.moemesh.expert;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.moemesh.expert.PlacementCoordinator.Outcome;
import io.moemesh.expert.PlacementCoordinator.Round;
import io.moemesh.model.moe.Placement;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import org.jboss.logging.Logger;

/**
 * Routed shard 0's balancer ({@code moemesh.expert.balancer.interval} > 0): a {@link PlacementCoordinator} round
 * every interval on its own thread, over {@code moemesh.expert.peers}, once this shard's experts are loaded.
 * Metrics: {@code moemesh_expert_balancedness{placement="active"|"proposed"}}, {@code moemesh_expert_placement_version},
 * {@code moemesh_expert_shard_tokens{shard}} (each shard's window) and {@code moemesh_expert_balancer_rounds_total{outcome}}.
 */
@ApplicationScoped
public class BalancerLoop {
  private static final Logger LOG = Logger.getLogger(BalancerLoop.class);
  @Inject ExpertConfig config;
  @Inject ExpertHost host;
  @Inject MeterRegistry registry;

  private final List<ShardClient> shards = new ArrayList<>();
  private ScheduledExecutorService timer;
  private volatile PlacementCoordinator coordinator;
  private volatile Round measured; // the last round that read the load
  private String lastSkip = "";

  void start(@Observes StartupEvent event) {
    Duration interval = config.balancer().interval();
    if (interval.isZero() || config.role() != ExpertConfig.Role.ROUTED || config.shard() != 0) return; // shard 0 balances them all
    List<String> peers = config.peers().orElse(List.of());
    if (interval.isNegative() || peers.size() != config.numShards())
      throw new IllegalStateException("moemesh.expert.balancer.interval=" + interval + " needs a positive interval and "
          + "moemesh.expert.peers = the " + config.numShards() + " shards' gRPC addresses in shard order; got role " + config.role()
          + ", shard " + config.shard() + ", peers " + peers);
    for (int s = 0; s < peers.size(); s++) shards.add(new GrpcShardClient(s, peers.get(s).trim(), config.balancer().timeout()));
    gauge("moemesh_expert_balancedness", "Mean over max routed tokens per shard, summed over MoE layers, for the current window",
        "placement", "active", r -> r.balancedness());
    gauge("moemesh_expert_balancedness", "Mean over max routed tokens per shard, summed over MoE layers, for the current window",
        "placement", "proposed", r -> r.proposedBalancedness());
    for (int s = 0; s < peers.size(); s++) {
      int shard = s;
      gauge("moemesh_expert_shard_tokens", "Routed tokens a shard computed over its load window", "shard", String.valueOf(s),
          r -> r.shardTokens().length > shard ? r.shardTokens()[shard] : Double.NaN);
    }
    Gauge.builder("moemesh_expert_placement_version", this, b -> b.coordinator == null ? Double.NaN : b.coordinator.active().version())
        .description("Version of the placement attention replicas are told to use").register(registry);
    for (Outcome o : Outcome.values()) registry.counter("moemesh_expert_balancer_rounds_total", "outcome", o.name().toLowerCase());
    timer = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("expert-balancer").daemon().factory());
    timer.scheduleWithFixedDelay(this::tick, interval.toMillis(), interval.toMillis(), TimeUnit.MILLISECONDS);
    LOG.infof("balancer: every %s over %s", interval, peers);
  }

  void stop(@Observes ShutdownEvent event) {
    if (timer != null) timer.shutdownNow();
    shards.forEach(ShardClient::close);
  }

  /** The placement attention replicas should use, when this shard runs the balancer. */
  Optional<Placement> active() {
    PlacementCoordinator c = coordinator;
    return c == null ? Optional.empty() : Optional.of(c.active());
  }

  private void tick() {
    try {
      if (!host.isReady()) return;
      if (coordinator == null)
        coordinator = new PlacementCoordinator(shards, host.held().placement(),
            new PlacementCoordinator.Policy(config.balancer().settle(), config.balancer().minGain(), config.balancer().minTokens()));
      Round r = coordinator.round();
      if (!Double.isNaN(r.balancedness())) measured = r;
      registry.counter("moemesh_expert_balancer_rounds_total", "outcome", r.outcome().name().toLowerCase()).increment();
      switch (r.outcome()) {
        case PUBLISHED, REPAIRED -> LOG.infof("balancer: %s (tokens per shard %s)", r.detail(), Arrays.toString(r.shardTokens()));
        case FAILED -> LOG.warnf("balancer: %s; version %d stays active", r.detail(), r.active().version());
        case UNCHANGED -> LOG.debugf("balancer: unchanged, %s", r.detail());
        case SETTLING -> LOG.debugf("balancer: waiting, %s", r.detail());
        case SKIPPED -> {
          if (!r.detail().equals(lastSkip)) LOG.warnf("balancer: round skipped: %s", r.detail());
        }
      }
      lastSkip = r.outcome() == Outcome.SKIPPED ? r.detail() : "";
    } catch (RuntimeException e) {
      LOG.error("balancer: round failed", e); // the next interval tries again
    }
  }

  private void gauge(String name, String help, String tag, String value, ToDoubleFunction<Round> f) {
    Gauge.builder(name, this, b -> b.measured == null ? Double.NaN : f.applyAsDouble(b.measured)).description(help).tag(tag, value)
        .register(registry);
  }
}
