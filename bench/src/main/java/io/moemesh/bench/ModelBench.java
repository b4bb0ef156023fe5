package io.moemesh.bench;

import io.moemesh.cli.Cli;
import io.moemesh.cli.DemoModels;
import io.moemesh.kernels.NativeKernels;
import io.moemesh.kernels.ProfilingKernels;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.ForwardBatch;
import io.moemesh.model.LatentKvCache;
import io.moemesh.model.Precision;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * {@code bench model}: single-stream prefill and decode of one model in one process, at 1 and 2 threads, each
 * against the memory roofline measured in the same run: triad bandwidth ÷ (weight bytes a decode step reads +
 * the KV it reads). Decode is what that roofline bounds; prefill is reported against it too (as the issue asks),
 * though a prompt's tokens share each weight read and prefill is compute-bound. With {@code --profile}, each thread
 * count's decode is run once more with every kernel call timed ({@link ProfilingKernels}): where a step's time goes.
 */
public final class ModelBench {
  private ModelBench() {}

  /** {@code dir} null: the bench demo model; {@code json} null: no JSON. */
  record Settings(Path dir, Precision precision, int promptLength, int decodeSteps, Path json, boolean profile,
      boolean contend) {
    /** The settings {@code bench model ARGS} runs with; a usage error is a picocli {@code ParameterException}. */
    static Settings parse(String... args) {
      return Cli.parse(new ModelBenchCommand(), args).settings();
    }
  }

  static void benchmark(Settings s) throws Exception {
    Precision precision = s.precision();
    int promptLength = s.promptLength(), decodeSteps = s.decodeSteps();
    Path json = s.json();
    boolean profile = s.profile();
    Path dir = s.dir() != null ? s.dir() : DemoModels.ensure("bench");

    var progress = new Progress();
    List<Measurement> results = new ArrayList<>();
    var triad = new StreamTriad();
    try (var loadKernels = NativeKernels.create(2);
        DeepseekModel loaded = DeepseekModel.load(dir, precision, loadKernels, DemoModels.progress("loading"))) {
      long weightBytes = loaded.activeWeightBytesPerToken();
      int[] prompt = new SplittableRandom(1).ints(promptLength, 300, 4000).toArray(); // real (non-placeholder) ids
      for (int threads = 1; threads <= 2; threads++) {
        double bandwidth = triad.bytesPerPass() / triad.bestSeconds(threads, 8, 2) / 1e9;
        results.add(new Measurement("triad", StreamTriad.shape(), threads, bandwidth, "GB/s", null, null, "best of 8"));
        try (var kernels = NativeKernels.create(threads); DeepseekModel m = loaded.withKernels(kernels)) {
          Run run = run(m, prompt, PREFILL_PASSES, decodeSteps, () -> {});
          long kvBytes = (long) (promptLength + decodeSteps / 2) * m.config().latentDim() * precision.kvCacheDType().byteSize()
              * m.config().numHiddenLayers();
          double roofline = bandwidth * 1e9 / (weightBytes + kvBytes); // tokens/s if every byte moved at triad speed
          String shape = dir.getFileName() + " " + precision.name().toLowerCase() + ", " + (weightBytes >> 20) + " MiB/token";
          results.add(new Measurement("decode", shape + ", ctx " + promptLength, threads, run.decodeTokensPerSecond(), "tok/s",
              run.decodeTokensPerSecond() / roofline, "roofline", "median of " + decodeSteps + " steps"));
          results.add(new Measurement("prefill", shape + ", prompt " + promptLength, threads, run.prefillTokensPerSecond(),
              "tok/s", run.prefillTokensPerSecond() / roofline, "roofline", "median of " + PREFILL_PASSES + " passes"));
          progress.log("threads %d: prefill %.1f tok/s, decode %.1f tok/s, roofline %.1f tok/s (%.0f GB/s, %d MiB/token)",
              threads, run.prefillTokensPerSecond(), run.decodeTokensPerSecond(), roofline, bandwidth, (weightBytes + kvBytes) >> 20);
          if (s.contend() && threads == 2) results.addAll(contended(m, prompt, decodeSteps, shape + ", ctx " + promptLength, progress));
        }
        if (profile) {
          try (var kernels = NativeKernels.create(threads)) {
            var profiled = new ProfilingKernels(kernels);
            run(loaded.withKernels(profiled), prompt, 1, decodeSteps, () -> {}); // the profiler's own code warms up
            Run run = run(loaded.withKernels(profiled), prompt, 1, decodeSteps, profiled::reset);
            System.out.println("decode step profile, " + threads + " thread(s), " + dir.getFileName() + " " + precision.name().toLowerCase()
                + ", ctx " + promptLength + " (mean of " + decodeSteps + " steps):");
            var light = new SpeedOfLight(bandwidth, Peaks.int8Gops(kernels), Peaks.bf16Gops(kernels));
            System.out.println(Report.profile(profiled.snapshot(), decodeSteps, run.decodeSeconds(), light));
          }
        }
      }
    }
    try (NativeKernels probe = NativeKernels.create(1)) {
      System.out.println(Report.machine() + ", native kernels: " + probe.isa().key());
    }
    System.out.println(Report.table(results));
    if (json != null) Report.writeJson(json, results);
  }

  /**
   * Decode alone and beside one CPU-bound process (a shell loop, as a noisy neighbour or a container at its quota
   * would be), alternated twice; rates from mean step times, so stalls count. The ratio is contended over quiet.
   */
  static List<Measurement> contended(DeepseekModel m, int[] prompt, int steps, String shape, Progress progress) throws Exception {
    double quiet = 0, busy = 0;
    for (int round = 0; round < 2; round++) {
      quiet += steps / run(m, prompt, 1, steps, () -> {}).decodeSeconds();
      Process hog = new ProcessBuilder("sh", "-c", "while :; do :; done").start();
      try {
        busy += steps / run(m, prompt, 1, steps, () -> {}).decodeSeconds();
      } finally {
        hog.destroyForcibly().waitFor();
      }
    }
    quiet /= 2;
    busy /= 2;
    progress.log("threads 2: decode %.1f tok/s alone, %.1f beside a CPU-bound process (%.2f)", quiet, busy, busy / quiet);
    return List.of(new Measurement("decode_alone", shape + ", mean step", 2, quiet, "tok/s", null, null, "mean of 2 x " + steps + " steps"),
        new Measurement("decode_contended", shape + ", one CPU-bound process beside", 2, busy, "tok/s", busy / quiet, "decode_alone",
            "mean of 2 x " + steps + " steps"));
  }

  /** Timed prefill passes of the whole prompt, after an untimed one (the step's buffers touched once, as in a server). */
  static final int PREFILL_PASSES = 3;

  /** Prefill's rate from its median pass, decode's from its median step; {@code decodeSeconds} is all steps' wall time. */
  record Run(double prefillTokensPerSecond, double decodeTokensPerSecond, double decodeSeconds) {}

  /**
   * {@code prefillPasses} prefills of {@code prompt} (each writing the same KV pages; with more than one, after an
   * untimed one), then decode steps (fixed token ids: sampling is not measured) through the KV cache;
   * {@code beforeDecode} runs between the two.
   */
  static Run run(DeepseekModel model, int[] prompt, int prefillPasses, int steps, Runnable beforeDecode) {
    int pageSize = 64, pages = (prompt.length + steps + pageSize) / pageSize + 1;
    int[] table = new int[pages];
    for (int i = 0; i < pages; i++) table[i] = i;
    try (TensorArena arena = TensorArena.open(); TensorArena scratch = TensorArena.workspace()) {
      LatentKvCache cache = model.newCache(arena, pages, pageSize);
      // compile the hot paths before timing (a short prompt and steps, for ThroughputBench.WARM_UP): timed while the
      // JIT still compiles, the kernels share the cores with its threads
      long warmUpEnd = System.nanoTime() + ThroughputBench.WARM_UP.toNanos();
      do {
        scratch.reset();
        model.forward(ForwardBatch.single(Arrays.copyOf(prompt, 32), 0, 32, table, false), cache, scratch);
        for (int step = 0; step < 8; step++) {
          scratch.reset();
          model.forward(ForwardBatch.single(new int[] {prompt[step]}, 32 + step, 32, table, false), cache, scratch);
        }
      } while (System.nanoTime() < warmUpEnd);
      double[] prefillSeconds = new double[prefillPasses];
      for (int pass = prefillPasses > 1 ? -1 : 0; pass < prefillPasses; pass++) {
        scratch.reset();
        long start = System.nanoTime();
        model.forward(ForwardBatch.single(prompt, 0, prompt.length, table, false), cache, scratch);
        if (pass >= 0) prefillSeconds[pass] = (System.nanoTime() - start) / 1e9;
      }
      Arrays.sort(prefillSeconds);
      double prefill = prompt.length / prefillSeconds[prefillPasses / 2];
      beforeDecode.run();
      double[] stepSeconds = new double[steps];
      for (int s = 0; s < steps; s++) {
        long t0 = System.nanoTime();
        scratch.reset();
        model.forward(ForwardBatch.single(new int[] {300 + s}, prompt.length + s, prompt.length, table, false), cache, scratch);
        stepSeconds[s] = (System.nanoTime() - t0) / 1e9;
      }
      double total = Arrays.stream(stepSeconds).sum();
      Arrays.sort(stepSeconds);
      return new Run(prefill, 1 / stepSeconds[steps / 2], total);
    }
  }
}
