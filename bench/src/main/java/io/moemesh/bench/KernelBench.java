package io.moemesh.bench;

import static io.moemesh.bench.KernelCases.TRIAD;
import static io.moemesh.bench.KernelCases.INT8_PEAK;

import io.moemesh.bench.KernelCases.Case;
import io.moemesh.cli.Cli;
import io.moemesh.kernels.KernelException;
import io.moemesh.kernels.NativeKernels;
import io.moemesh.kernels.TensorArena;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * {@code bin/moemesh bench kernels [--json FILE] [--quick] [--only CASE,...]}: in one run, the STREAM triad
 * bandwidth of this machine and, against it, the native kernels the model's time goes to: INT8 and BF16
 * decode GEMV (GB/s of weights), INT8 prefill GEMM (GOP/s, against the measured VNNI peak), the batched-decode
 * BF16-weight GEMM with a BF16 activation (VDPBF16PS) against the F32-activation path on the same shape
 * (GFLOP/s), MLA decode attention (GB/s of KV), one MoE projection of 40 small experts as 40 INT8 calls
 * against one grouped call, and the bench model's 64 experts of 2 to 4 rows (a decode batch of 32) in one grouped
 * call, each at 1 and 2 threads. Progress goes to stderr, the table to stdout, and with {@code --json} one object
 * per measurement to FILE.
 */
public final class KernelBench {
  private static final int[] THREADS = {1, 2};
  private static final List<String> ORDER = Stream.of(Stream.of(TRIAD), KernelCases.NAMES.stream().filter(n -> n.startsWith("gemv")),
      Stream.of(INT8_PEAK), KernelCases.NAMES.stream().filter(n -> !n.startsWith("gemv"))).flatMap(n -> n).toList();

  /**
   * Command-line options. {@code quick}: fewer and shorter repetitions (about 30 s instead of 2 minutes);
   * {@code only}: the cases to run (empty: all), with the cases they are compared with; triad always runs.
   */
  record Options(Path json, boolean quick, Set<String> only) {
    /** The options {@code bench kernels ARGS} runs with; a usage error is a picocli {@code ParameterException}. */
    static Options parse(String... args) {
      return Cli.parse(new KernelBenchCommand(), args).options();
    }
  }

  private final Options options;
  private final Timing timing;
  private final Progress progress = new Progress();
  private String isa = "?"; // the kernels' instruction-set path, for the report header

  KernelBench(Options options) {
    this.options = options;
    this.timing = options.quick() ? Timing.QUICK : Timing.FULL;
  }

  /** Runs the benchmark and prints the table; a failure of the native kernels is an {@link IllegalStateException}. */
  static void benchmark(Options options) throws IOException, InterruptedException {
    var bench = new KernelBench(options);
    List<Measurement> results;
    try {
      results = bench.run();
    } catch (KernelException | UnsatisfiedLinkError e) {
      throw new IllegalStateException("the native kernels failed: " + e, e);
    }
    bench.report(results);
  }

  private void report(List<Measurement> results) throws IOException {
    System.out.println();
    System.out.println(Report.machine() + ", native kernels: " + isa);
    System.out.print(Report.table(results));
    System.out.println("triad: best of its passes (STREAM's rule); kernels: median of " + timing.reps() + " repetitions; GB = 1e9 bytes");
    if (options.json() != null) {
      Report.writeJson(options.json(), results);
      System.out.println("wrote " + options.json());
    }
  }

  List<Measurement> run() throws InterruptedException {
    progress.log("kernel benchmark (%s): triad, then GEMV, GEMM and MLA decode at %d and %d threads",
        options.quick() ? "quick" : "full", THREADS[0], THREADS[1]);
    List<Measurement> results = new ArrayList<>(measureTriad());
    Map<Integer, Double> triad = new HashMap<>();
    for (Measurement m : results) triad.put(m.threads(), m.value());

    try (TensorArena arena = TensorArena.open()) {
      List<Case> cases = KernelCases.create(arena, progress, options.only());
      boolean needsPeak = cases.stream().anyMatch(c -> INT8_PEAK.equals(c.ratioTo()));
      for (int threads : THREADS) {
        try (NativeKernels kernels = NativeKernels.create(threads)) {
          isa = kernels.isa().key();
          Map<String, Double> measured = new HashMap<>(Map.of(TRIAD, triad.get(threads)));
          if (needsPeak) {
            progress.log("%s with %d thread(s): measuring the INT8 peak", kernels.name(), threads);
            double peak = Peaks.int8Gops(kernels);
            String loop = switch (kernels.isa()) { // the path's own INT8 multiply-add, in registers
              case AVX512, AVX512_NO_BF16 -> "register-only VPDPBUSD loop";
              case AVX2 -> "register-only VPMADDUBSW+VPMADDWD loop";
              case PORTABLE -> "register-only portable C loop";
            };
            results.add(new Measurement(INT8_PEAK, loop, threads, peak, "GOP/s", null, null, "best of " + Peaks.RUNS));
            progress.log("%-14s t=%d  %8.1f GOP/s", INT8_PEAK, threads, peak);
            measured.put(INT8_PEAK, peak);
          }
          for (Case c : cases) {
            double seconds = timing.medianSecondsPerCall(() -> c.call().accept(kernels));
            double value = c.rate(seconds);
            measured.put(c.name(), value);
            Double ratio = c.ratioTo() == null ? null : value / measured.get(c.ratioTo());
            results.add(new Measurement(c.name(), c.shape(), threads, value, c.unit(), ratio, c.ratioTo(), timing.stat()));
            progress.log("%-14s t=%d  %8.1f %-7s  %s  (%.3f ms per call)", c.name(), threads, value, c.unit(),
                ratio == null ? "" : String.format(Locale.ROOT, "%.2f of %s", ratio, c.ratioTo()), seconds * 1e3);
          }
        }
      }
    }
    results.sort(Comparator.comparingInt((Measurement m) -> ORDER.indexOf(m.name())).thenComparingInt(Measurement::threads));
    return results;
  }

  private List<Measurement> measureTriad() throws InterruptedException {
    int passes = options.quick() ? 8 : 20;
    List<Measurement> results = new ArrayList<>();
    progress.log("triad: allocating %s", StreamTriad.shape());
    try (var triad = new StreamTriad()) {
      for (int threads : THREADS) {
        double seconds = triad.bestSeconds(threads, passes, 3);
        double gbps = triad.bytesPerPass() / seconds / 1e9;
        results.add(new Measurement(TRIAD, StreamTriad.shape(), threads, gbps, "GB/s", null, null, "best of " + passes));
        progress.log("%-14s t=%d  %8.1f GB/s  (best of %d passes)", TRIAD, threads, gbps, passes);
      }
    }
    return results;
  }


}
