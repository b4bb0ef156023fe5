package io.moemesh.planner.decide;

import io.moemesh.planner.Stage;
import java.time.Instant;

/**
 * One stage's decision in one round, with the inputs it was made from (logged, and exported as metrics).
 *
 * @param actual             the replicas the connector reported
 * @param required           what the arithmetic asks for, corrected and within bounds
 * @param desired            what the stage is scaled to: {@code required} after cool-downs and hysteresis
 * @param demand             the load (prompt tokens/s for prefill, concurrent requests for decode)
 * @param capacityPerReplica the profile's figure in the same unit
 * @param correction         the correction factor applied
 * @param observedLatency    the interval's TTFT (prefill) or ITL (decode) at the held quantile, seconds; NaN if none
 * @param targetLatency      the target, seconds
 */
public record Decision(Stage stage, Instant at, int actual, int required, int desired, Reason reason, double demand,
    double capacityPerReplica, double correction, double observedLatency, double targetLatency) {

  public boolean changes() {
    return desired != actual;
  }

  /** One log line with every input. */
  public String describe() {
    return String.format(java.util.Locale.ROOT,
        "%s: %d -> %d (%s) required=%d demand=%.1f %s capacity/replica=%.1f correction=%.2f observed=%.3fs target=%.3fs",
        stage.label(), actual, desired, reason, required, demand, stage == Stage.PREFILL ? "tokens/s" : "requests",
        capacityPerReplica, correction, observedLatency, targetLatency);
  }
}
