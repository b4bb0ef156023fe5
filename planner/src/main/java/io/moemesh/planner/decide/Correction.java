package io.moemesh.planner.decide;

/**
 * How much a stage's profiled capacity overstates what its replicas do now, as in Dynamo's SLA planner: when a stage
 * had at least the replicas the profile asks for and still missed its target, the observed/target latency ratio moves
 * the factor (a moving average, between 1 and {@code max}); the required replicas are multiplied by it. A stage that
 * had too few replicas serving (pods still loading count as none) missed for a known reason and leaves it alone; one that meets its target lets it fall back.
 */
final class Correction {
  private final double max;
  private final double weight;
  private double factor = 1;

  Correction(double max, double weight) {
    this.max = max;
    this.weight = weight;
  }

  double factor() {
    return factor;
  }

  /**
   * @param observedSeconds the interval's latency at the held quantile (NaN when nothing was recorded)
   * @param targetSeconds   the target
   * @param hadPredictedCapacity whether at least the uncorrected required replicas served the interval
   */
  void update(double observedSeconds, double targetSeconds, boolean hadPredictedCapacity) {
    if (!Double.isFinite(observedSeconds) || !hadPredictedCapacity) return;
    double ratio = observedSeconds / targetSeconds;
    factor = Math.clamp((1 - weight) * factor + weight * ratio, 1, max);
  }
}
