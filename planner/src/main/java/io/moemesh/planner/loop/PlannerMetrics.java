package io.moemesh.planner.loop;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.moemesh.planner.Stage;
import io.moemesh.planner.decide.Decision;
import io.moemesh.planner.observe.Percentiles;
import io.moemesh.planner.observe.StageObservation;
import java.util.EnumMap;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * The planner's figures on the host's registry (docs/planner.md, "Metrics"): each stage's desired and actual replicas,
 * the inputs of its last decision, and the observed latencies. NaN until the first round.
 */
public final class PlannerMetrics {
  private static final double[] QUANTILES = {0.5, 0.9, 0.99};
  private final Map<Stage, Decision> decisions = new EnumMap<>(Stage.class);
  private final Map<Stage, StageObservation> observations = new EnumMap<>(Stage.class);

  public PlannerMetrics(MeterRegistry registry) {
    for (Stage stage : Stage.values()) {
      decisionGauge(registry, "moemesh_planner_replicas", "Replicas of the stage: desired by the planner, actual before it acted",
          stage, "kind", "desired", Decision::desired);
      decisionGauge(registry, "moemesh_planner_replicas", "Replicas of the stage: desired by the planner, actual before it acted",
          stage, "kind", "actual", Decision::actual);
      decisionGauge(registry, "moemesh_planner_required_replicas", "Replicas the arithmetic asks for, before cool-downs",
          stage, null, null, Decision::required);
      decisionGauge(registry, "moemesh_planner_demand", "Load to carry: prompt tokens/s (prefill), requests in flight (decode)",
          stage, null, null, Decision::demand);
      decisionGauge(registry, "moemesh_planner_correction_factor", "Observed/target latency factor applied to the profile",
          stage, null, null, Decision::correction);
      observationGauge(registry, "moemesh_planner_observed_request_rate", "Requests per second over the last interval", stage,
          StageObservation::requestsPerSecond);
      observationGauge(registry, "moemesh_planner_observed_running_requests", "Requests running, summed over replicas", stage,
          StageObservation::runningRequests);
      observationGauge(registry, "moemesh_planner_observed_replicas", "Replicas that answered the scrape", stage,
          StageObservation::replicas);
    }
    stageGauge(registry, "moemesh_planner_observed_prompt_tokens_mean", "Prompt tokens per request (prefill)", Stage.PREFILL,
        StageObservation::meanPromptTokens);
    stageGauge(registry, "moemesh_planner_observed_output_tokens_mean", "Output tokens per request (decode)", Stage.DECODE,
        StageObservation::meanOutputTokens);
    stageGauge(registry, "moemesh_planner_observed_queued_prompt_tokens", "Prompt tokens queued on prefill", Stage.PREFILL,
        StageObservation::queuedPromptTokens);
    stageGauge(registry, "moemesh_planner_observed_kv_usage", "Decode KV-cache usage, mean over replicas", Stage.DECODE,
        StageObservation::kvUsage);
    for (double q : QUANTILES) {
      latencyGauge(registry, "moemesh_planner_observed_ttft_seconds", "Time to first token over the last interval", Stage.PREFILL,
          q, StageObservation::ttft);
      latencyGauge(registry, "moemesh_planner_observed_itl_seconds", "Inter-token latency over the last interval", Stage.DECODE,
          q, StageObservation::itl);
    }
  }

  public synchronized void record(Decision decision, StageObservation observation) {
    decisions.put(decision.stage(), decision);
    observations.put(observation.stage(), observation);
  }

  private synchronized double decision(Stage stage, ToDoubleFunction<Decision> value) {
    Decision d = decisions.get(stage);
    return d == null ? Double.NaN : value.applyAsDouble(d);
  }

  private synchronized double observation(Stage stage, ToDoubleFunction<StageObservation> value) {
    StageObservation o = observations.get(stage);
    return o == null ? Double.NaN : value.applyAsDouble(o);
  }

  private void decisionGauge(MeterRegistry registry, String name, String help, Stage stage, String tag, String tagValue,
      ToDoubleFunction<Decision> value) {
    var builder = Gauge.builder(name, this, m -> m.decision(stage, value)).description(help).tag("stage", stage.label());
    if (tag != null) builder.tag(tag, tagValue);
    builder.register(registry);
  }

  private void observationGauge(MeterRegistry registry, String name, String help, Stage stage, ToDoubleFunction<StageObservation> value) {
    Gauge.builder(name, this, m -> m.observation(stage, value)).description(help).tag("stage", stage.label()).register(registry);
  }

  private void stageGauge(MeterRegistry registry, String name, String help, Stage stage, ToDoubleFunction<StageObservation> value) {
    Gauge.builder(name, this, m -> m.observation(stage, value)).description(help).register(registry);
  }

  private void latencyGauge(MeterRegistry registry, String name, String help, Stage stage, double quantile,
      java.util.function.Function<StageObservation, Percentiles> latency) {
    Gauge.builder(name, this, m -> m.observation(stage, o -> latency.apply(o).at(quantile))).description(help)
        .tag("quantile", Double.toString(quantile)).register(registry);
  }
}
