package io.moemesh.bench;

import java.util.Arrays;

/**
 * How a kernel call is timed: warm up for {@code warmupSeconds} (at least two calls: JIT, thread pool and
 * caches), then {@code reps} repetitions, each a batch of calls lasting about {@code repSeconds}; the result
 * is the median over repetitions of the seconds per call.
 */
record Timing(int reps, double repSeconds, double warmupSeconds) {
  static final Timing FULL = new Timing(11, 0.4, 0.6);
  static final Timing QUICK = new Timing(5, 0.1, 0.2);

  Timing {
    if (reps < 5) throw new IllegalArgumentException("report the median of at least 5 repetitions, not " + reps);
  }

  double medianSecondsPerCall(Runnable call) {
    long warmupEnd = System.nanoTime() + (long) (warmupSeconds * 1e9);
    int warmupCalls = 0;
    do {
      call.run();
      warmupCalls++;
    } while (warmupCalls < 2 || System.nanoTime() < warmupEnd);
    int callsPerRep = (int) Math.max(1, Math.round(repSeconds / secondsPerCall(call, 1)));
    double[] samples = new double[reps];
    for (int r = 0; r < reps; r++) samples[r] = secondsPerCall(call, callsPerRep);
    return median(samples);
  }

  static double secondsPerCall(Runnable call, int calls) {
    long t0 = System.nanoTime();
    for (int i = 0; i < calls; i++) call.run();
    return (System.nanoTime() - t0) / 1e9 / calls;
  }

  static double median(double[] samples) {
    double[] s = samples.clone();
    Arrays.sort(s);
    int mid = s.length / 2;
    return s.length % 2 == 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  }

  String stat() {
    return "median of " + reps;
  }
}
