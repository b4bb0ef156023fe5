package io.moemesh.planner.decide;

import io.moemesh.planner.observe.StageObservation;
import java.time.Duration;

/**
 * The load each stage must carry over the next interval, in the unit its profile capacity is given in; the prediction is
 * the last interval's load ("constant" in Dynamo's terms).
 */
final class Demand {
  private Demand() {}

  /**
   * Prefill: prompt tokens per second, those computed in the interval plus the queued ones spread over
   * {@code backlogDrain}: a saturated stage computes no more than its capacity, and the queue shows the rest.
   */
  static double prefillTokensPerSecond(StageObservation prefill, Duration backlogDrain) {
    return prefill.promptTokensPerSecond() + prefill.queuedPromptTokens() / seconds(backlogDrain);
  }

  /**
   * Decode: requests in flight. Little's law gives arrival rate × time in the stage, and a request stays about
   * (output tokens × ITL target) in it; the requests observed running and waiting are the floor, since a saturated
   * stage finishes fewer requests than arrive.
   */
  static double decodeConcurrency(StageObservation decode, Duration itlTarget) {
    double littles = decode.requestsPerSecond() > 0 && Double.isFinite(decode.meanOutputTokens())
        ? decode.requestsPerSecond() * decode.meanOutputTokens() * seconds(itlTarget) : 0;
    return Math.max(littles, decode.runningRequests() + decode.waitingRequests());
  }

  /** ceil(demand × correction / capacity), with a little slack so that 2.0000001 replicas is 2. */
  static int replicas(double demand, double correction, double capacityPerReplica) {
    double exact = demand * correction / capacityPerReplica;
    return (int) Math.min(Integer.MAX_VALUE, Math.ceil(exact - 1e-6));
  }

  static double seconds(Duration d) {
    return d.toNanos() / 1e9;
  }
}
