package io.moemesh.planner.service;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/** Settings of the planner service ({@code moemesh.planner.*}; docs/planner.md, "Configuration"). */
@ConfigMapping(prefix = "moemesh.planner")
public interface PlannerConfig {

  /** Time between rounds: each round scrapes every replica, observes the interval since the last, and decides. */
  @WithDefault("10s")
  Duration interval();

  /** The time to first token to hold, at {@link #quantile()} (e.g. {@code 500ms}). */
  Duration ttftTarget();

  /** The inter-token latency to hold, at {@link #quantile()} (e.g. {@code 50ms}). */
  Duration itlTarget();

  /** The observed quantile held to the targets: 0.5, 0.9 or 0.99. */
  @WithDefault("0.9")
  double quantile();

  /** The profile JSON: what one replica of each stage sustains at the targets (docs/planner.md, "Profile"). */
  Path profile();

  /** Where replicas are counted and scaled. */
  @WithDefault("kubernetes")
  ConnectorKind connector();

  /** The namespace of the Deployments and Services ({@code kubernetes} connector or discovery); default: the pod's. */
  Optional<String> namespace();

  /**
   * Fixed metrics URLs of the prefill replicas (e.g. {@code http://127.0.0.1:9200/q/metrics}); without them the
   * replicas are the Endpoints of the Service {@code moemesh-prefill}.
   */
  Optional<List<URI>> prefillReplicas();

  /** Fixed metrics URLs of the decode replicas; without them, the Endpoints of {@code moemesh-decode}. */
  Optional<List<URI>> decodeReplicas();

  /** How long one scrape may take; a replica that does not answer in time is left out of the round. */
  @WithDefault("3s")
  Duration scrapeTimeout();

  Bounds prefill();

  Bounds decode();

  /** Time after a stage's scale-up before its next scale-up. */
  @WithDefault("30s")
  Duration scaleUpCooldown();

  /** Time a lower count must have been required, and since the stage's last scaling, before it scales down. */
  @WithDefault("3m")
  Duration scaleDownCooldown();

  /** Time in which the queued prompt tokens should be computed, on top of the arriving ones. */
  @WithDefault("30s")
  Duration backlogDrain();

  /** The largest correction factor applied to the profile's capacities. */
  @WithDefault("4")
  double maxCorrection();

  /** Weight of the latest interval in the correction's moving average, in (0, 1]. */
  @WithDefault("0.5")
  double correctionWeight();

  /** The {@code local} connector's processes. */
  Local local();

  /** How the {@code local} connector starts a stage's replica i (docs/planner.md, "Connectors"). */
  interface Local {
    /**
     * A file holding the command that starts a prefill replica, one argument a line, with {@code {index}},
     * {@code {httpPort}} and {@code {grpcPort}} filled in per replica ({@code bin/moemesh up --planner} writes it).
     */
    Optional<Path> prefillLaunch();

    /** The same for a decode replica. */
    Optional<Path> decodeLaunch();

    /** HTTP port of prefill replica 0; replica i serves HTTP on base + 10·i and gRPC one above ({@code up}'s ports). */
    @WithDefault("9200")
    int prefillHttpBase();

    /** HTTP port of decode replica 0. */
    @WithDefault("9300")
    int decodeHttpBase();

    /** Where replica i of a stage logs ({@code <stage>-<i>.log}); default: {@code java.io.tmpdir}/moemesh-planner. */
    Optional<Path> logDir();

    /**
     * How long a replica stopped with SIGTERM may take to exit (its drain, then its JVM's shutdown) before it is
     * killed; longer than the replicas' drain timeout.
     */
    @WithDefault("60s")
    Duration stopGrace();
  }

  /** A stage's replica bounds. */
  interface Bounds {
    /** The fewest replicas, at least 1. */
    @WithDefault("1")
    int minReplicas();

    /** The most replicas. */
    @WithDefault("8")
    int maxReplicas();
  }

  enum ConnectorKind {
    /** scale the Deployments moemesh-prefill and moemesh-decode through the Kubernetes API */
    KUBERNETES,
    /** decide, log and export, but change nothing: the actual count is the number of replicas found */
    ADVISORY,
    /** start and stop the replicas as local processes ({@code bin/moemesh up --planner}): the planner owns them */
    LOCAL
  }
}
