package io.moemesh.planner.decide;

import io.moemesh.planner.Stage;
import io.moemesh.planner.observe.Percentiles;
import io.moemesh.planner.observe.StageObservation;

/** Observations of a 10 s interval, with only the figures the decision reads. */
final class Observations {
  private Observations() {}

  static StageObservation prefill(double promptTokensPerSecond, double queuedPromptTokens, double ttftSeconds) {
    return new StageObservation(Stage.PREFILL, 10, 8, promptTokensPerSecond / 500, promptTokensPerSecond, 0, 500, 1,
        latency(ttftSeconds), Percentiles.NONE, queuedPromptTokens, 0.1, 1, 0);
  }

  static StageObservation decode(double requestsPerSecond, double meanOutputTokens, double running, double waiting, double itlSeconds) {
    return decode(8, requestsPerSecond, meanOutputTokens, running, waiting, itlSeconds);
  }

  /** @param replicas the replicas scraped (serving), whatever the connector counts */
  static StageObservation decode(int replicas, double requestsPerSecond, double meanOutputTokens, double running, double waiting,
      double itlSeconds) {
    return new StageObservation(Stage.DECODE, 10, replicas, requestsPerSecond, 0, requestsPerSecond * meanOutputTokens, 0,
        meanOutputTokens, Percentiles.NONE, latency(itlSeconds), 0, 0.5, running, waiting);
  }

  private static Percentiles latency(double seconds) {
    return Double.isNaN(seconds) ? Percentiles.NONE : new Percentiles(seconds, seconds, seconds, 100);
  }
}
