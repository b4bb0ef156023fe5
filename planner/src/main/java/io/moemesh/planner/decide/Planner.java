package io.moemesh.planner.decide;

import io.moemesh.planner.Stage;
import io.moemesh.planner.observe.StageObservation;
import java.time.Instant;
import java.util.EnumMap;
import java.util.Map;

/**
 * The SLA planner's decision, one round at a time (docs/planner.md, "The arithmetic"): for each stage, the load it must
 * carry ({@link Demand}), divided by what one replica carries at the target ({@link Profile}), times the stage's
 * {@link Correction}, within bounds; then {@link Hysteresis}. It holds only the state that damping needs and reads no
 * clock, so a recorded series of observations replays to the same decisions.
 */
public final class Planner {
  private final PlannerSettings settings;
  private final Profile profile;
  private final Map<Stage, Correction> corrections = new EnumMap<>(Stage.class);
  private final Map<Stage, Hysteresis> hysteresis = new EnumMap<>(Stage.class);

  public Planner(PlannerSettings settings, Profile profile) {
    this.settings = settings;
    this.profile = profile;
    for (Stage stage : Stage.values()) {
      corrections.put(stage, new Correction(settings.maxCorrection(), settings.correctionWeight()));
      hysteresis.put(stage, new Hysteresis(settings.scaleUpCooldown(), settings.scaleDownCooldown()));
    }
  }

  public PlannerSettings settings() {
    return settings;
  }

  public Profile profile() {
    return profile;
  }

  /**
   * @param observation the stage's last interval
   * @param actual      the replicas the stage has now (from the connector)
   */
  public Decision decide(Instant now, StageObservation observation, int actual) {
    Stage stage = observation.stage();
    StageBounds bounds = settings.bounds(stage);
    double capacity = capacity(stage);
    double target = Demand.seconds(settings.target(stage));
    double observed = (stage == Stage.PREFILL ? observation.ttft() : observation.itl()).at(settings.quantile());
    Correction correction = corrections.get(stage);
    if (!(observation.seconds() > 0)) {
      int desired = bounds.clamp(actual);
      if (desired != actual) hysteresis.get(stage).scaledTo(now, desired > actual);
      return new Decision(stage, now, actual, desired, desired, desired == actual ? Reason.NO_DATA : Reason.OUT_OF_BOUNDS,
          Double.NaN, capacity, correction.factor(), observed, target);
    }
    double demand = demand(observation);
    // the replicas that served the interval: pods still loading their model are counted by the connector, not scraped
    int serving = Math.min(actual, observation.replicas());
    correction.update(observed, target, serving >= Demand.replicas(demand, 1, capacity));
    int required = bounds.clamp(Demand.replicas(demand, correction.factor(), capacity));
    Hysteresis.Outcome outcome;
    if (actual != bounds.clamp(actual)) {
      outcome = new Hysteresis.Outcome(bounds.clamp(actual), Reason.OUT_OF_BOUNDS);
      hysteresis.get(stage).scaledTo(now, outcome.desired() > actual);
    } else {
      outcome = hysteresis.get(stage).next(now, actual, required);
    }
    return new Decision(stage, now, actual, required, outcome.desired(), outcome.reason(), demand, capacity,
        correction.factor(), observed, target);
  }

  private double demand(StageObservation observation) {
    return switch (observation.stage()) {
      case PREFILL -> Demand.prefillTokensPerSecond(observation, settings.backlogDrain());
      case DECODE -> Demand.decodeConcurrency(observation, settings.itlTarget());
    };
  }

  private double capacity(Stage stage) {
    return switch (stage) {
      case PREFILL -> profile.prefillTokensPerSecond();
      case DECODE -> profile.decodeConcurrency();
    };
  }
}
