package io.moemesh.planner.decide;

import io.moemesh.planner.Stage;
import java.time.Duration;
import java.util.Objects;

/**
 * The planner's targets and damping (docs/planner.md, "Configuration").
 *
 * @param ttftTarget         the time to first token to hold, at {@code quantile}
 * @param itlTarget          the inter-token latency to hold, at {@code quantile}
 * @param quantile           which observed quantile is held to the targets: 0.5, 0.9 or 0.99
 * @param prefill            prefill's replica bounds
 * @param decode             decode's replica bounds
 * @param scaleUpCooldown    time after a scale-up before the next scale-up of the stage
 * @param scaleDownCooldown  time a lower count must have been required, and since the stage's last scaling, before it
 *                           scales down
 * @param backlogDrain       time in which the queued prompt tokens should be computed, on top of the arriving ones
 * @param maxCorrection      the largest correction factor (how much the profile may overstate a replica's capacity)
 * @param correctionWeight   the weight of the latest interval in the correction's moving average (0..1]
 */
public record PlannerSettings(Duration ttftTarget, Duration itlTarget, double quantile, StageBounds prefill,
    StageBounds decode, Duration scaleUpCooldown, Duration scaleDownCooldown, Duration backlogDrain, double maxCorrection,
    double correctionWeight) {

  public PlannerSettings {
    requirePositive("ttft-target", ttftTarget);
    requirePositive("itl-target", itlTarget);
    requirePositive("backlog-drain", backlogDrain);
    if (quantile != 0.5 && quantile != 0.9 && quantile != 0.99) throw new IllegalArgumentException("quantile must be 0.5, 0.9 or 0.99, not " + quantile);
    Objects.requireNonNull(prefill, "prefill bounds");
    Objects.requireNonNull(decode, "decode bounds");
    if (scaleUpCooldown.isNegative() || scaleDownCooldown.isNegative()) throw new IllegalArgumentException("cool-downs must be >= 0");
    if (!(maxCorrection >= 1)) throw new IllegalArgumentException("max-correction must be >= 1, not " + maxCorrection);
    if (!(correctionWeight > 0 && correctionWeight <= 1)) throw new IllegalArgumentException("correction-weight must be in (0, 1], not " + correctionWeight);
  }

  /** Targets with the defaults: p90, 1..8 replicas, 30 s up / 3 min down cool-downs, 30 s backlog, correction ≤ 4, weight 0.5. */
  public static PlannerSettings withTargets(Duration ttftTarget, Duration itlTarget) {
    return new PlannerSettings(ttftTarget, itlTarget, 0.9, new StageBounds(1, 8), new StageBounds(1, 8),
        Duration.ofSeconds(30), Duration.ofMinutes(3), Duration.ofSeconds(30), 4, 0.5);
  }

  public StageBounds bounds(Stage stage) {
    return switch (stage) {
      case PREFILL -> prefill;
      case DECODE -> decode;
    };
  }

  public Duration target(Stage stage) {
    return switch (stage) {
      case PREFILL -> ttftTarget;
      case DECODE -> itlTarget;
    };
  }

  private static void requirePositive(String name, Duration d) {
    if (d == null || d.isNegative() || d.isZero()) throw new IllegalArgumentException(name + " must be > 0, not " + d);
  }
}
