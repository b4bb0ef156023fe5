package io.moemesh.expert;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.moemesh.expert.PlacementCoordinator.Heartbeat;
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
 * A routed shard's placement coordinator, over {@code moemesh.expert.peers}, once this shard's experts are loaded:
 * a heartbeat every {@code moemesh.expert.failover.heartbeat} (when > 0) and a {@link PlacementCoordinator} round
 * every {@code moemesh.expert.balancer.interval} (when > 0), both on one thread. Every routed shard runs it; the
 * lowest-numbered live shard coordinates (shard 0 while it answers), the others watch and take over. Metrics:
 * {@code moemesh_expert_balancedness{placement="active"|"proposed"}}, {@code moemesh_expert_placement_version},
 * {@code moemesh_expert_shard_tokens{shard}} (each shard's window), {@code moemesh_expert_balancer_rounds_total{outcome}},
 * {@code moemesh_expert_live_shards}, {@code moemesh_expert_shard_losses_total{shard}} (this shard's view) and
 * {@code moemesh_expert_coordinating} (1 on the shard that coordinates).
 */
@ApplicationScoped
public class BalancerLoop {
  private static final Logger LOG = Logger.getLogger(BalancerLoop.class);
  @Inject ExpertConfig config;
  @Inject ExpertHost host;
  @Inject MeterRegistry registry;

  private final List<ShardClient> shards = new ArrayList<>();
  private Duration silence, roundWait; // the failover's: a hung shard is lost once silent this long; a heartbeat waits this long
  private ScheduledExecutorService timer;
  private volatile PlacementCoordinator coordinator;
  private volatile Round measured; // the last round that read the load
  private String lastSkip = "";

  void start(@Observes StartupEvent event) {
    Duration interval = config.balancer().interval(), heartbeat = config.failover().heartbeat();
    if (config.role() != ExpertConfig.Role.ROUTED) return;
    List<String> peers = config.peers().orElse(List.of());
    boolean meshKnown = peers.size() == config.numShards();
    if (interval.isNegative() || heartbeat.isNegative() || (config.shard() == 0 && !interval.isZero() && !meshKnown))
      throw new IllegalStateException("moemesh.expert.balancer.interval=" + interval + " needs a positive interval and "
          + "moemesh.expert.peers = the " + config.numShards() + " shards' gRPC addresses in shard order; got role " + config.role()
          + ", shard " + config.shard() + ", peers " + peers + ", heartbeat " + heartbeat);
    boolean failover = !heartbeat.isZero() && meshKnown && config.numShards() > 1;
    if ((interval.isZero() || !meshKnown) && !failover) return; // without peers a shard other than 0 leaves it to shard 0
    // a dead process refuses at once; the deadline is for a hung one, and long enough for a busy one's event loop
    Duration heartbeatDeadline = heartbeat.multipliedBy(2).compareTo(Duration.ofSeconds(2)) < 0 ? Duration.ofSeconds(2) : heartbeat.multipliedBy(2);
    // a heartbeat waits one interval for answers and leaves a late call under way, so a shard that answers within the
    // deadline is heard from at least every deadline + 2 intervals; a hung one answers nothing: lost once silent past
    // the deadline and `misses` intervals more (2 s + 3 × 500 ms), without waiting out a deadline per miss
    silence = heartbeatDeadline.plus(heartbeat.multipliedBy(config.failover().misses()));
    roundWait = heartbeat;
    for (int s = 0; s < peers.size(); s++)
      shards.add(new GrpcShardClient(s, peers.get(s).trim(), config.balancer().timeout(), heartbeatDeadline));
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
    Gauge.builder("moemesh_expert_live_shards", this, b -> b.coordinator == null ? peers.size() : b.coordinator.liveShards())
        .description("Routed shards answering this shard's heartbeats").register(registry);
    Gauge.builder("moemesh_expert_coordinating", this,
        b -> (b.coordinator == null ? config.shard() == 0 : b.coordinator.coordinating()) ? 1 : 0)
        .description("1 on the routed shard that runs the failover and the balancer (the lowest-numbered live one)").register(registry);
    for (int s = 0; s < peers.size(); s++) registry.counter("moemesh_expert_shard_losses_total", "shard", String.valueOf(s));
    timer = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("expert-balancer").daemon().factory());
    if (!interval.isZero() && meshKnown) timer.scheduleWithFixedDelay(this::tick, interval.toMillis(), interval.toMillis(), TimeUnit.MILLISECONDS);
    if (failover) timer.scheduleWithFixedDelay(this::heartbeat, heartbeat.toMillis(), heartbeat.toMillis(), TimeUnit.MILLISECONDS);
    LOG.infof("placement coordinator on shard %d (coordinates while no lower shard is live): balancer %s, failover %s (lost after %d"
        + " failed heartbeats in a row or %d ms without an answer) over %s", config.shard(), interval.isZero() ? "off" : "every " + interval,
        failover ? "heartbeat every " + heartbeat : "off", config.failover().misses(), silence.toMillis(), peers);
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

  /** The coordinator, once this shard's experts are loaded (it starts from the placement they were loaded for); else null. */
  private PlacementCoordinator coordinator() {
    if (coordinator == null && host.isReady())
      coordinator = new PlacementCoordinator(shards, host.held().placement(),
          new PlacementCoordinator.Policy(config.balancer().settle(), config.balancer().minGain(), config.balancer().minTokens()),
          config.failover().misses(), config.shard(), silence == null ? Duration.ofDays(1) : silence,
          roundWait == null ? Duration.ofSeconds(30) : roundWait);
    return coordinator;
  }

  private void heartbeat() {
    try {
      PlacementCoordinator c = coordinator();
      if (c == null) return;
      boolean wasCoordinating = c.coordinating();
      Heartbeat h = c.heartbeat();
      h.lost().forEach((shard, why) -> {
        registry.counter("moemesh_expert_shard_losses_total", "shard", String.valueOf(shard)).increment();
        LOG.warnf("failover: routed shard %d at %s is lost (%s); its slots move to the live shards", shard,
            config.peers().orElseThrow().get(shard).trim(), why.startsWith("silent: ") ? why : config.failover().misses() + " heartbeats missed, last: " + why);
      });
      h.back().forEach(shard -> LOG.infof("failover: routed shard %d at %s answers again", shard, config.peers().orElseThrow().get(shard).trim()));
      if (!h.detail().isEmpty() && (h.outcome() == Outcome.FOLLOWING || h.outcome() == Outcome.UNCHANGED)) LOG.infof("failover: %s", h.detail());
      if (c.coordinating() != wasCoordinating)
        LOG.warnf("failover: shard %d %s (live shards in this view: %s)", config.shard(), c.coordinating() ? "coordinates now" : "stops coordinating:"
            + " shard " + PlacementCoordinator.coordinator(c.live()) + " is live again", Arrays.toString(c.live()));
      switch (h.outcome()) {
        case REPLACED -> LOG.warnf("failover: %s", h.detail());
        case REHOMED -> LOG.infof("failover: %s", h.detail());
        case FAILED -> LOG.warnf("failover: %s; version %d stays active", h.detail(), h.active().version());
        default -> {}
      }
      if (h.outcome() != Outcome.UNCHANGED && h.outcome() != Outcome.FOLLOWING)
        registry.counter("moemesh_expert_balancer_rounds_total", "outcome", h.outcome().name().toLowerCase()).increment();
    } catch (RuntimeException e) {
      LOG.error("failover: heartbeat failed", e); // the next one tries again
    }
  }

  private void tick() {
    try {
      if (coordinator() == null) return;
      Round r = coordinator.round();
      if (!Double.isNaN(r.balancedness())) measured = r;
      if (r.outcome() != Outcome.FOLLOWING) registry.counter("moemesh_expert_balancer_rounds_total", "outcome", r.outcome().name().toLowerCase()).increment();
      switch (r.outcome()) {
        case PUBLISHED, REPAIRED -> LOG.infof("balancer: %s (tokens per shard %s)", r.detail(), Arrays.toString(r.shardTokens()));
        case FAILED -> LOG.warnf("balancer: %s; version %d stays active", r.detail(), r.active().version());
        case UNCHANGED -> LOG.debugf("balancer: unchanged, %s", r.detail());
        case DEGRADED, REPLACED, REHOMED, FOLLOWING -> LOG.debugf("balancer: not moving experts, %s", r.detail());
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
