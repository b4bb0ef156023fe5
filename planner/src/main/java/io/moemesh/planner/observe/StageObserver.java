package io.moemesh.planner.observe;

import static io.moemesh.planner.observe.EngineSeries.*;

import io.moemesh.planner.Stage;
import java.time.Duration;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * A stage's {@link StageObservation} from two rounds of scrapes, a pure function. Counters and histograms are
 * differenced per replica (a replica whose counter went down restarted: its current value is the interval's); a
 * replica without a previous scrape (new, or missed last round) adds its gauges but no rates.
 */
public final class StageObserver {
  private StageObserver() {}

  /**
   * @param previous the last round's scrapes of the stage, by replica address
   * @param current  this round's scrapes of the stage, by replica address
   */
  public static StageObservation observe(Stage stage, Map<String, Scrape> previous, Map<String, Scrape> current) {
    if (current.isEmpty()) return StageObservation.empty(stage, 0);
    double requestsPerSecond = 0, promptPerSecond = 0, generationPerSecond = 0;
    double requests = 0, promptTokens = 0, generationTokens = 0, seconds = 0;
    NavigableMap<Double, Double> ttftBuckets = new TreeMap<>(), itlBuckets = new TreeMap<>();
    double queued = 0, kvUsage = 0, running = 0, waiting = 0;
    for (Scrape now : current.values()) {
      queued += now.sum(QUEUED_PROMPT_TOKENS);
      kvUsage += now.sum(KV_USAGE);
      running += now.sum(RUNNING);
      waiting += now.sum(WAITING);
      Scrape before = previous.get(now.replica());
      if (before == null) continue;
      double dt = Duration.between(before.at(), now.at()).toNanos() / 1e9;
      if (!(dt > 0)) continue;
      seconds = Math.max(seconds, dt);
      double dRequests = stage == Stage.PREFILL ? increase(before, now, TTFT + "_count") : increase(before, now, REQUEST_SUCCESS);
      double dPrompt = increase(before, now, PROMPT_TOKENS), dGeneration = increase(before, now, GENERATION_TOKENS);
      requests += dRequests;
      promptTokens += dPrompt;
      generationTokens += dGeneration;
      requestsPerSecond += dRequests / dt;
      promptPerSecond += dPrompt / dt;
      generationPerSecond += dGeneration / dt;
      add(ttftBuckets, Percentiles.delta(before.buckets(TTFT), now.buckets(TTFT)));
      add(itlBuckets, Percentiles.delta(before.buckets(ITL), now.buckets(ITL)));
    }
    return new StageObservation(stage, seconds, current.size(), requestsPerSecond, promptPerSecond, generationPerSecond,
        requests > 0 ? promptTokens / requests : Double.NaN, requests > 0 ? generationTokens / requests : Double.NaN,
        Percentiles.of(ttftBuckets), Percentiles.of(itlBuckets), queued, kvUsage / current.size(), running, waiting);
  }

  /** A counter's increase over the interval; its current value when it went down (the replica restarted). */
  static double increase(Scrape before, Scrape now, String counter) {
    double a = before.sum(counter), b = now.sum(counter);
    return b >= a ? b - a : b;
  }

  private static void add(NavigableMap<Double, Double> into, NavigableMap<Double, Double> buckets) {
    buckets.forEach((bound, count) -> into.merge(bound, count, Double::sum));
  }
}
