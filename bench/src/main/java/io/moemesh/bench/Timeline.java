package io.moemesh.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * A run's figures over time, for the charts and the JSON: consecutive windows of {@code windowSeconds}, and per ramp
 * phase. Latencies (TTFT, TPOT) belong to the window or phase in which their request was <em>sent</em>, the load it
 * met; a completion (the achieved rate, goodput) to the one in which it <em>ended</em>, so an overloaded server shows
 * an achieved rate below the offered one. A request still running at its phase's end counts for the rate of the phase
 * it ends in (none, past the last phase: the overall figures have it).
 */
record Timeline(double windowSeconds, List<Window> windows, List<Phase> phases) {

  /**
   * @param offeredRate the schedule's rate averaged over the window (NaN for a closed loop or an infinite rate)
   * @param sent requests sent in the window
   * @param completed requests that completed in the window
   * @param good of those, the ones within every SLO
   * @param failed requests that failed in the window (e.g. refused: HTTP 429 from a saturated server)
   * @param ttft of the completed requests sent in the window
   */
  record Window(double startSeconds, double seconds, double offeredRate, int sent, int completed, int good, int failed,
      ServeStats.Summary ttft, ServeStats.Summary tpot) {
    double sentRate() {
      return sent / seconds;
    }

    double achievedRate() {
      return completed / seconds;
    }

    double goodput() {
      return good / seconds;
    }

    double failedRate() {
      return failed / seconds;
    }
  }

  /**
   * One ramp phase: {@code stats} are the figures of the requests sent in it (their latencies, and how many were
   * good); {@code completed} and {@code good} count the completions that ended within it.
   */
  record Phase(RatePhase phase, double startSeconds, int sent, int completed, int good, ServeStats stats) {
    double sentRate() {
      return sent / phase.seconds();
    }

    double achievedRate() {
      return completed / phase.seconds();
    }

    double goodput() {
      return good / phase.seconds();
    }
  }

  /**
   * The windows from 0 to the later of the run's end and the schedule's (the last one up to 1.5 windows long); phases
   * when {@code schedule} has some.
   */
  static Timeline of(List<TimedResult> requests, double durationSeconds, Load load, ArrivalSchedule schedule, Slos slos,
      double windowSeconds) {
    double end = Math.max(durationSeconds, schedule == null ? 0 : schedule.endSeconds());
    List<Window> windows = new ArrayList<>();
    for (double start = 0; start < end; start += windowSeconds) {
      // a tail shorter than half a window joins the last one: rates over a sliver of a second would be noise
      double seconds = end - start < 1.5 * windowSeconds ? end - start : windowSeconds;
      windows.add(window(requests, start, seconds, offeredRate(load, schedule, start, start + seconds), slos));
      if (seconds != windowSeconds) break;
    }
    List<Phase> phases = new ArrayList<>();
    if (schedule != null) {
      for (int p = 0; p < schedule.phases().size(); p++) phases.add(phase(requests, schedule, p, slos));
    }
    return new Timeline(windowSeconds, List.copyOf(windows), List.copyOf(phases));
  }

  private static Window window(List<TimedResult> requests, double start, double seconds, double offered, Slos slos) {
    double end = start + seconds;
    List<RequestResult> sentHere = requests.stream().filter(r -> r.sentSeconds() >= start && r.sentSeconds() < end)
        .map(TimedResult::result).toList();
    List<RequestResult> endedHere = endedWithin(requests, start, end);
    int failed = (int) requests.stream().filter(r -> !r.result().ok() && r.endSeconds() >= start && r.endSeconds() < end).count();
    ServeStats stats = ServeStats.of(sentHere, seconds, slos);
    return new Window(start, seconds, offered, sentHere.size(), endedHere.size(), (int) endedHere.stream().filter(slos::met).count(), failed,
        stats.ttft(), stats.tpot());
  }

  private static Phase phase(List<TimedResult> requests, ArrivalSchedule schedule, int p, Slos slos) {
    RatePhase phase = schedule.phases().get(p);
    double start = schedule.phaseStart(p), end = start + phase.seconds();
    List<RequestResult> sentHere = requests.stream().filter(r -> r.phase() == p).map(TimedResult::result).toList();
    List<RequestResult> endedHere = endedWithin(requests, start, end);
    return new Phase(phase, start, sentHere.size(), endedHere.size(), (int) endedHere.stream().filter(slos::met).count(),
        ServeStats.of(sentHere, phase.seconds(), slos));
  }

  private static List<RequestResult> endedWithin(List<TimedResult> requests, double start, double end) {
    return requests.stream().filter(r -> r.result().ok() && r.endSeconds() >= start && r.endSeconds() < end).map(TimedResult::result).toList();
  }

  /** The schedule's mean rate over [from, to): a ramp's phases weighted by their overlap; a single rate until its last arrival. */
  static double offeredRate(Load load, ArrivalSchedule schedule, double from, double to) {
    return switch (load) {
      case Load.ClosedLoop c -> Double.NaN;
      case Load.Poisson p -> Double.isInfinite(p.rate()) ? Double.NaN : from <= schedule.endSeconds() ? p.rate() : 0;
      case Load.Ramp r -> {
        double arrivals = 0;
        for (int i = 0; i < r.phases().size(); i++) {
          double start = schedule.phaseStart(i), end = start + r.phases().get(i).seconds();
          arrivals += r.phases().get(i).rate() * Math.max(0, Math.min(to, end) - Math.max(from, start));
        }
        yield arrivals / (to - from);
      }
    };
  }
}
