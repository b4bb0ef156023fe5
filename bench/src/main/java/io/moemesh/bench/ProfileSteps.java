package io.moemesh.bench;

import java.util.List;

/**
 * The arithmetic of {@code bench profile}: each load step's figures from its requests, and the planner's capacities
 * from the steps (docs/planner.md, "Profile"). Pure: no clock, no network.
 */
final class ProfileSteps {
  private ProfileSteps() {}

  /**
   * One closed-loop step of {@code concurrency} clients.
   *
   * @param promptTokensPerSecond prompt tokens of the completed requests ÷ the step's seconds: what the one prefill
   *     replica computed
   * @param decodeConcurrency     the time-average of the requests past their first token (Σ (latency − TTFT) ÷ the
   *     step's seconds, Little's law measured): what the one decode replica ran at once
   */
  record Step(int concurrency, int completed, int failed, double ttftP90, double itlP90, double promptTokensPerSecond,
      double decodeConcurrency) {
    static Step of(int concurrency, List<RequestResult> results, double seconds) {
      ServeStats stats = ServeStats.of(results, seconds);
      double inDecode = results.stream().filter(RequestResult::ok).mapToDouble(r -> r.latencySeconds() - r.ttftSeconds()).sum();
      return new Step(concurrency, stats.completed(), stats.failed(), stats.ttft().p90(), stats.itl().p90(),
          stats.totalInputTokens() / seconds, inDecode / seconds);
    }

    boolean meetsTtft(double targetSeconds) {
      return failed == 0 && ttftP90 <= targetSeconds;
    }

    boolean meetsItl(double targetSeconds) {
      return failed == 0 && itlP90 <= targetSeconds;
    }
  }

  /**
   * A capacity: the figure of the highest step that met the target, and whether a step missed it (false: every step
   * met it, the figure is a lower bound; raise the concurrency).
   */
  record Capacity(double perReplica, int atConcurrency, boolean targetReached) {}

  /** Prompt tokens/s of the highest prefill step whose p90 TTFT met the target; null when none did. */
  static Capacity prefill(List<Step> steps, double ttftTargetSeconds) {
    return best(steps, s -> s.meetsTtft(ttftTargetSeconds), Step::promptTokensPerSecond);
  }

  /** Requests in decode at once in the highest decode step whose p90 ITL met the target; null when none did. */
  static Capacity decode(List<Step> steps, double itlTargetSeconds) {
    return best(steps, s -> s.meetsItl(itlTargetSeconds), Step::decodeConcurrency);
  }

  /** Whether stepping on can change the answer: the last step met the target. */
  static boolean stillMeeting(List<Step> steps, java.util.function.Predicate<Step> meets) {
    return !steps.isEmpty() && meets.test(steps.getLast());
  }

  private static Capacity best(List<Step> steps, java.util.function.Predicate<Step> meets, java.util.function.ToDoubleFunction<Step> figure) {
    Step best = null;
    boolean missed = false;
    for (Step s : steps) {
      if (meets.test(s)) {
        if (best == null || figure.applyAsDouble(s) > figure.applyAsDouble(best)) best = s;
      } else {
        missed = true;
      }
    }
    return best == null ? null : new Capacity(figure.applyAsDouble(best), best.concurrency(), missed);
  }
}
