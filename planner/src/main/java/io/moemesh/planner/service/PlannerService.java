package io.moemesh.planner.service;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.micrometer.core.instrument.MeterRegistry;
import io.moemesh.planner.Stage;
import io.moemesh.planner.connect.AdvisoryConnector;
import io.moemesh.planner.connect.LocalProcessConnector;
import io.moemesh.planner.connect.KubernetesConnector;
import io.moemesh.planner.connect.KubernetesDiscovery;
import io.moemesh.planner.connect.ReplicaConnector;
import io.moemesh.planner.connect.ReplicaDiscovery;
import io.moemesh.planner.decide.Planner;
import io.moemesh.planner.decide.PlannerSettings;
import io.moemesh.planner.decide.Profile;
import io.moemesh.planner.decide.StageBounds;
import io.moemesh.planner.loop.PlannerMetrics;
import io.moemesh.planner.loop.PlanningRound;
import io.moemesh.planner.observe.MetricsScraper;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.io.IOException;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.Map;
import java.time.Clock;
import java.time.Instant;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * The planner as a service: at start it reads the profile, builds discovery and the connector from
 * {@link PlannerConfig}, and runs a {@link PlanningRound} every interval on its own thread. A round's failure is logged
 * by the round; the timer goes on.
 */
@ApplicationScoped
public class PlannerService {
  private static final Logger LOG = Logger.getLogger(PlannerService.class.getName());

  @Inject PlannerConfig config;
  @Inject MeterRegistry registry;
  private KubernetesClient kubernetes;
  private LocalProcessConnector local;
  private ScheduledExecutorService timer;
  private volatile Instant lastRoundAt;

  void start(@Observes StartupEvent event) throws IOException {
    Profile profile = Profile.read(config.profile());
    var settings = new PlannerSettings(config.ttftTarget(), config.itlTarget(), config.quantile(),
        new StageBounds(config.prefill().minReplicas(), config.prefill().maxReplicas()),
        new StageBounds(config.decode().minReplicas(), config.decode().maxReplicas()), config.scaleUpCooldown(),
        config.scaleDownCooldown(), config.backlogDrain(), config.maxCorrection(), config.correctionWeight());
    ReplicaConnector connector;
    ReplicaDiscovery discovery;
    if (config.connector() == PlannerConfig.ConnectorKind.LOCAL) {
      local = localProcesses();
      connector = local;
      discovery = local; // the processes it started, on their ports
    } else {
      discovery = discovery();
      connector = switch (config.connector()) {
        case KUBERNETES -> new KubernetesConnector(kubernetes(), namespace());
        case ADVISORY -> new AdvisoryConnector(discovery);
        case LOCAL -> throw new AssertionError();
      };
    }
    var round = new PlanningRound(new Planner(settings, profile), discovery,
        new MetricsScraper(config.scrapeTimeout(), Clock.systemUTC()), connector, new PlannerMetrics(registry), Clock.systemUTC());
    LOG.info("planner: ttft " + config.ttftTarget().toMillis() + " ms, itl " + config.itlTarget().toMillis() + " ms at p"
        + Math.round(config.quantile() * 100) + ", every " + config.interval().toSeconds() + " s, connector "
        + config.connector() + ", profile " + config.profile() + " (" + profile.measuredOn() + ")");
    timer = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("planner").daemon().factory());
    long period = config.interval().toMillis();
    // a fixed delay, not a fixed rate: a round that waits for a replica's drain is not followed at once by one that
    // observes a fraction of a second (whose request rate is noise, and scaled a live mesh back up once)
    timer.scheduleWithFixedDelay(() -> {
      round.run();
      lastRoundAt = Instant.now();
    }, 0, period, TimeUnit.MILLISECONDS);
  }

  void stop(@Observes ShutdownEvent event) throws InterruptedException {
    if (timer != null) {
      timer.shutdown(); // a round that is scaling down waits for its replica's drain
      if (!timer.awaitTermination(config.local().stopGrace().toMillis() * 2, TimeUnit.MILLISECONDS)) timer.shutdownNow();
    }
    if (local != null) {
      LOG.info("planner: stopping the replicas it started");
      local.close();
    }
    if (kubernetes != null) kubernetes.close();
  }

  /** When the last round ended; null before the first. */
  public Instant lastRoundAt() {
    return lastRoundAt;
  }

  /** The local connector from its launch files; a stage without one cannot be scaled (each round logs it). */
  private LocalProcessConnector localProcesses() throws IOException {
    if (config.prefillReplicas().isPresent() || config.decodeReplicas().isPresent()) {
      throw new IllegalArgumentException("moemesh.planner.prefill-replicas and decode-replicas are for the kubernetes and "
          + "advisory connectors: the local connector finds the replicas it started");
    }
    PlannerConfig.Local local = config.local();
    Map<Stage, LocalProcessConnector.Launch> launches = new EnumMap<>(Stage.class);
    if (local.prefillLaunch().isPresent())
      launches.put(Stage.PREFILL, LocalProcessConnector.Launch.read(local.prefillLaunch().get(), local.prefillHttpBase()));
    if (local.decodeLaunch().isPresent())
      launches.put(Stage.DECODE, LocalProcessConnector.Launch.read(local.decodeLaunch().get(), local.decodeHttpBase()));
    if (launches.isEmpty()) {
      throw new IllegalArgumentException("the local connector needs moemesh.planner.local.prefill-launch or decode-launch");
    }
    Path logDir = local.logDir().orElseGet(() -> Path.of(System.getProperty("java.io.tmpdir"), "moemesh-planner"));
    return new LocalProcessConnector(launches, logDir, local.stopGrace());
  }

  private ReplicaDiscovery discovery() {
    if (config.prefillReplicas().isPresent() != config.decodeReplicas().isPresent()) {
      throw new IllegalArgumentException("moemesh.planner.prefill-replicas and decode-replicas are given together or not at all");
    }
    if (config.prefillReplicas().isPresent()) {
      return ReplicaDiscovery.fixed(config.prefillReplicas().get(), config.decodeReplicas().get());
    }
    return new KubernetesDiscovery(kubernetes(), namespace());
  }

  private KubernetesClient kubernetes() {
    if (kubernetes == null) kubernetes = new KubernetesClientBuilder().build();
    return kubernetes;
  }

  private String namespace() {
    return config.namespace().orElseGet(() -> {
      String ns = kubernetes().getNamespace();
      return ns == null ? "default" : ns;
    });
  }
}
