package io.moemesh.planner.loop;

import io.moemesh.planner.Stage;
import io.moemesh.planner.connect.ReplicaConnector;
import io.moemesh.planner.connect.ReplicaDiscovery;
import io.moemesh.planner.decide.Decision;
import io.moemesh.planner.decide.Planner;
import io.moemesh.planner.observe.MetricsScraper;
import io.moemesh.planner.observe.Scrape;
import io.moemesh.planner.observe.StageObservation;
import io.moemesh.planner.observe.StageObserver;
import java.io.IOException;
import java.net.URI;
import java.time.Clock;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One planning round per {@link #run()}: for each stage, find its replicas, scrape them, observe the interval since
 * the last round, decide, log the decision with its inputs, export it, and scale through the connector when the count
 * changes. The host calls it every interval (the Quarkus service on a timer; a test by hand). A stage whose connector
 * fails is skipped this round and logged; the other stage goes on.
 */
public final class PlanningRound {
  private static final Logger LOG = Logger.getLogger(PlanningRound.class.getName());
  private final Planner planner;
  private final ReplicaDiscovery discovery;
  private final MetricsScraper scraper;
  private final ReplicaConnector connector;
  private final PlannerMetrics metrics;
  private final Clock clock;
  private final Map<Stage, Map<String, Scrape>> previous = new EnumMap<>(Stage.class);

  public PlanningRound(Planner planner, ReplicaDiscovery discovery, MetricsScraper scraper, ReplicaConnector connector,
      PlannerMetrics metrics, Clock clock) {
    this.planner = planner;
    this.discovery = discovery;
    this.scraper = scraper;
    this.connector = connector;
    this.metrics = metrics;
    this.clock = clock;
  }

  public synchronized List<Decision> run() {
    List<Decision> decisions = new ArrayList<>();
    for (Stage stage : Stage.values()) {
      try {
        decisions.add(plan(stage));
      } catch (RuntimeException e) {
        LOG.log(Level.WARNING, "planner: " + stage.label() + " skipped this round: " + e.getMessage(), e);
      }
    }
    return decisions;
  }

  private Decision plan(Stage stage) {
    Map<String, Scrape> current = scrape(stage);
    StageObservation observation = StageObserver.observe(stage, previous.getOrDefault(stage, Map.of()), current);
    previous.put(stage, current);
    int actual = connector.replicas(stage);
    Decision decision = planner.decide(clock.instant(), observation, actual);
    metrics.record(decision, observation);
    LOG.info("planner: " + decision.describe() + " | " + describe(observation));
    if (decision.changes()) connector.scale(stage, decision.desired());
    return decision;
  }

  private Map<String, Scrape> scrape(Stage stage) {
    Map<String, Scrape> byReplica = new HashMap<>();
    for (URI url : discovery.metricsUrls(stage)) {
      try {
        Scrape scrape = scraper.scrape(url);
        byReplica.put(scrape.replica(), scrape);
      } catch (IOException e) {
        LOG.warning("planner: " + stage.label() + " replica not scraped: " + e.getMessage());
      }
    }
    return byReplica;
  }

  private static String describe(StageObservation o) {
    return String.format(java.util.Locale.ROOT,
        "observed over %.1fs: replicas=%d requests/s=%.2f prompt tokens/s=%.1f mean prompt=%.1f mean output=%.1f "
            + "ttft p50/p90/p99=%.3f/%.3f/%.3fs itl p50/p90/p99=%.3f/%.3f/%.3fs queued prompt tokens=%.0f kv=%.2f running=%.0f waiting=%.0f",
        o.seconds(), o.replicas(), o.requestsPerSecond(), o.promptTokensPerSecond(), o.meanPromptTokens(),
        o.meanOutputTokens(), o.ttft().p50(), o.ttft().p90(), o.ttft().p99(), o.itl().p50(), o.itl().p90(), o.itl().p99(),
        o.queuedPromptTokens(), o.kvUsage(), o.runningRequests(), o.waitingRequests());
  }
}
