package io.moemesh.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * When each measured request is sent, in seconds from the start of the run, and the phase it belongs to. Within a
 * phase the gaps are exponential with mean {@code 1 / rate} (a Poisson process, vLLM's {@code --request-rate}); at a
 * phase boundary the clock restarts at the new rate, exact for a Poisson process since it has no memory. The gaps
 * come from a seeded generator: the same options give the same schedule.
 *
 * <p>{@link Load.Poisson}: {@code count} requests in one phase, the first at 0 as in vLLM; an infinite rate sends
 * them all at 0. {@link Load.Ramp}: as many requests as the phases' arrivals give; a phase's first arrival is one gap
 * after its start. A closed loop has no schedule.
 */
final class ArrivalSchedule {
  private final List<RatePhase> phases; // a Poisson load: one phase of infinite length
  private final double[] sendSeconds; // (numRequests) ascending
  private final int[] phaseOfRequest; // (numRequests)

  private ArrivalSchedule(List<RatePhase> phases, double[] sendSeconds, int[] phaseOfRequest) {
    this.phases = phases;
    this.sendSeconds = sendSeconds;
    this.phaseOfRequest = phaseOfRequest;
  }

  /** The schedule of an open-loop load; null for a closed loop. */
  static ArrivalSchedule of(Load load, int count, long seed) {
    return switch (load) {
      case Load.ClosedLoop c -> null;
      case Load.Poisson p -> poisson(p.rate(), count, seed);
      case Load.Ramp r -> ramp(r.phases(), seed);
    };
  }

  static ArrivalSchedule poisson(double rate, int count, long seed) {
    var random = new SplittableRandom(seed);
    double[] at = new double[count];
    for (int i = 1; i < count; i++) at[i] = at[i - 1] + (Double.isInfinite(rate) ? 0 : exponential(random, rate));
    return new ArrivalSchedule(List.of(), at, new int[count]);
  }

  static ArrivalSchedule ramp(List<RatePhase> phases, long seed) {
    var random = new SplittableRandom(seed);
    List<Double> at = new ArrayList<>();
    List<Integer> phaseOf = new ArrayList<>();
    double phaseStart = 0;
    for (int p = 0; p < phases.size(); p++) {
      RatePhase phase = phases.get(p);
      double phaseEnd = phaseStart + phase.seconds();
      if (phase.rate() > 0) {
        for (double t = phaseStart + exponential(random, phase.rate()); t < phaseEnd; t += exponential(random, phase.rate())) {
          at.add(t);
          phaseOf.add(p);
        }
      }
      phaseStart = phaseEnd;
    }
    return new ArrivalSchedule(List.copyOf(phases), at.stream().mapToDouble(Double::doubleValue).toArray(),
        phaseOf.stream().mapToInt(Integer::intValue).toArray());
  }

  /** An exponential gap of mean {@code 1 / rate} by inversion ({@code 1 − u} is in (0, 1], so the log is finite). */
  private static double exponential(SplittableRandom random, double rate) {
    return -Math.log(1 - random.nextDouble()) / rate;
  }

  int size() {
    return sendSeconds.length;
  }

  double sendSeconds(int request) {
    return sendSeconds[request];
  }

  int phaseOf(int request) {
    return phaseOfRequest[request];
  }

  /** The ramp's phases; empty for a single-rate load. */
  List<RatePhase> phases() {
    return phases;
  }

  /** When phase {@code p} starts, in seconds from the run's start. */
  double phaseStart(int p) {
    double start = 0;
    for (int i = 0; i < p; i++) start += phases.get(i).seconds();
    return start;
  }

  /** The schedule's last instant: the end of the last phase, or the last arrival of a single-rate load. */
  double endSeconds() {
    return phases.isEmpty() ? (sendSeconds.length == 0 ? 0 : sendSeconds[sendSeconds.length - 1]) : phaseStart(phases.size());
  }
}
