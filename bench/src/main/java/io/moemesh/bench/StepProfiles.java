package io.moemesh.bench;

import io.moemesh.kernels.ProfilingKernels;
import io.moemesh.kernels.ProfilingKernels.OpTime;
import io.moemesh.kernels.ProfilingKernels.Work;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A profiler's calls split by the kind of engine step they ran in: after every step its ops are taken from the
 * profiler (which starts over) and added to the full-batch decode steps, to the steps that compute prompt tokens, or to
 * neither (a decode step of part of the batch).
 */
final class StepProfiles {
  /** The ops of one kind of step, summed over its steps. */
  static final class Kind {
    private final Map<String, OpTime> ops = new LinkedHashMap<>();
    private int steps;
    private double seconds;
    private long tokens;

    void add(List<OpTime> step, double stepSeconds, long stepTokens) {
      for (OpTime op : step) ops.merge(op.op(), op, Kind::sum);
      steps++;
      seconds += stepSeconds;
      tokens += stepTokens;
    }

    private static OpTime sum(OpTime a, OpTime b) {
      Work x = a.work(), y = b.work();
      return new OpTime(a.op(), a.calls() + b.calls(), a.nanos() + b.nanos(), new Work(x.bytes() + y.bytes(),
          x.int8Macs() + y.int8Macs(), x.bf16Macs() + y.bf16Macs(), x.f32Macs() + y.f32Macs()));
    }

    /** The ops, the most expensive first. */
    List<OpTime> ops() {
      return ops.values().stream().sorted(Comparator.comparingLong(OpTime::nanos).reversed()).toList();
    }

    int steps() {
      return steps;
    }

    double seconds() {
      return seconds;
    }

    /** Tokens a step computed, on average. */
    double tokensPerStep() {
      return steps == 0 ? 0 : (double) tokens / steps;
    }
  }

  final ProfilingKernels profiler;
  final Kind decode = new Kind(), prompt = new Kind();

  StepProfiles(ProfilingKernels profiler) {
    this.profiler = profiler;
  }

  /** Takes the ops of the step just run into {@code kind} (null: drops them). */
  void stepDone(Kind kind, double seconds, long tokens) {
    List<OpTime> step = profiler.snapshot();
    profiler.reset();
    if (kind != null) kind.add(step, seconds, tokens);
  }
}
