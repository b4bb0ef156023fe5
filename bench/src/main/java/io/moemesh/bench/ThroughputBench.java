package io.moemesh.bench;

import io.moemesh.cli.Cli;
import io.moemesh.cli.DemoModels;
import io.moemesh.engine.DeepseekRunner;
import io.moemesh.engine.EngineCore;
import io.moemesh.engine.GenerationRequest;
import io.moemesh.engine.KvCacheConfig;
import io.moemesh.engine.KvConnector;
import io.moemesh.engine.ModelLimits;
import io.moemesh.engine.ModelRunner;
import io.moemesh.engine.RequestOutput;
import io.moemesh.engine.RunnerOutput;
import io.moemesh.engine.ScheduledChunk;
import io.moemesh.engine.Scheduler;
import io.moemesh.engine.SchedulerConfig;
import io.moemesh.engine.SchedulerOutput;
import io.moemesh.engine.SpecDecodeStats;
import io.moemesh.engine.kv.KvCacheManager;
import io.moemesh.kernels.NativeKernels;
import io.moemesh.kernels.ProfilingKernels;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.Precision;
import io.moemesh.model.sampling.SamplingParams;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * {@code bench throughput}: B requests of I prompt tokens and O output tokens through the engine (continuous
 * batching, chunked prefill), per batch size B. Reports prefill tokens/s, decode tokens/s and time per output
 * token; decode is compared with the memory roofline of its own steps, measured in the same run:
 * <pre>
 *   roofline tokens/s = B · triad bandwidth ÷ (dense weights + distinct routed experts the step's tokens pick
 *                                             + the KV every sequence reads)
 * </pre>
 * averaged over the steps where all B requests decode together, the triad taken right before and after those steps.
 * {@code --micro-batch-threshold T} runs steps of at least T tokens as two overlapped micro-batches (0 = never;
 * default as the engine's). {@code --speculative-tokens K} decodes with K MTP drafts per request and step: a step then
 * delivers 1 to K + 1 tokens per request, so decode tokens/s, time per output token and the roofline count the tokens
 * the full-batch steps delivered, and the drafts' acceptance is reported.
 */
public final class ThroughputBench {
  static final java.time.Duration WARM_UP = java.time.Duration.ofSeconds(15);

  private ThroughputBench() {}

  /** {@code dir} null: the bench demo model; {@code json} null: no JSON. */
  record Settings(Path dir, Precision precision, int[] batches, int inputLen, int outputLen, int threads, Path json,
      boolean profile, int microBatchThreshold, int speculativeTokens) {
    /** The settings {@code bench throughput ARGS} runs with; a usage error is a picocli {@code ParameterException}. */
    static Settings parse(String... args) {
      return Cli.parse(new ThroughputBenchCommand(), args).settings();
    }
  }

  static void benchmark(Settings s) throws Exception {
    Precision precision = s.precision();
    int[] batches = s.batches();
    int inputLen = s.inputLen(), outputLen = s.outputLen(), threads = s.threads(), microBatchThreshold = s.microBatchThreshold();
    int k = s.speculativeTokens();
    Path json = s.json();
    boolean profile = s.profile();
    Path dir = s.dir() != null ? s.dir() : DemoModels.ensure("bench");

    var progress = new Progress();
    List<Measurement> results = new ArrayList<>();
    try (var nativeKernels = NativeKernels.create(threads); var triad = new StreamTriad();
        DeepseekModel m = DeepseekModel.load(dir, precision, nativeKernels, DemoModels.progress("loading"))) {
      ProfilingKernels profiler = profile ? new ProfilingKernels(nativeKernels) : null;
      double int8Peak = profile ? Peaks.int8Gops(nativeKernels) : 0, bf16Peak = profile ? Peaks.bf16Gops(nativeKernels) : 0;
      DeepseekModel measured = profile ? m.withKernels(profiler) : m;
      String shape = dir.getFileName() + " " + precision.name().toLowerCase() + ", in " + inputLen + ", out " + outputLen
          + ", micro-batches from " + (microBatchThreshold == 0 ? "never" : microBatchThreshold + " tokens")
          + (k == 0 ? "" : ", MTP k=" + k);
      for (int b : batches) {
        StepProfiles profiles = profiler != null ? new StepProfiles(profiler) : null;
        Result r = measure(measured, b, inputLen, outputLen, microBatchThreshold, k, profiles, progress, WARM_UP, () -> triadGbps(triad, threads));
        double bandwidth = Math.max(r.triadBefore(), r.triadAfter());
        double roofline = b * r.tokensPerRequestStep() * bandwidth * 1e9 / r.bytesPerDecodeStep(); // the tokens its steps deliver
        results.add(new Measurement("triad", StreamTriad.shape(), threads, bandwidth, "GB/s", null, null,
            String.format("best of 8 just before and 8 just after the run (%.1f and %.1f)", r.triadBefore(), r.triadAfter())));
        results.add(new Measurement("decode_b" + b, shape, threads, r.decodeTokensPerSecond(), "tok/s",
            r.decodeTokensPerSecond() / roofline, "roofline", "median of " + r.decodeSteps() + " full-batch steps"));
        results.add(new Measurement("tpot_b" + b, shape, threads, r.secondsPerOutputToken() * 1e3, "ms", null, null,
            "median of " + r.decodeSteps() + " full-batch steps" + (k == 0 ? "" : String.format(java.util.Locale.ROOT,
                " over %.2f tokens a request gains a step", r.tokensPerRequestStep()))));
        if (k > 0)
          results.add(new Measurement("spec_acceptance_b" + b, shape, threads, r.speculation().acceptanceRate(), "accepted/draft", null, null,
              String.format(java.util.Locale.ROOT, "%d of %d draft tokens, per position %s", r.speculation().numAcceptedTokens(),
                  r.speculation().numDraftTokens(), Arrays.toString(r.speculation().acceptedPerPosition()))));
        results.add(new Measurement("prefill_b" + b, shape, threads, r.prefillTokensPerSecond(), "tok/s", null, null,
            "until every request has its first token"));
        progress.log("batch %d: prefill %.0f tok/s, decode %.1f tok/s (%.2f of a %.1f tok/s roofline: %d MiB/step at %.0f GB/s, "
            + "the triad's best of %.0f before and %.0f after), TPOT %.1f ms", b, r.prefillTokensPerSecond(), r.decodeTokensPerSecond(),
            r.decodeTokensPerSecond() / roofline, roofline, r.bytesPerDecodeStep() >> 20, bandwidth, r.triadBefore(), r.triadAfter(),
            r.secondsPerOutputToken() * 1e3);
        if (profiles != null) {
          var light = new SpeedOfLight(bandwidth, int8Peak, bf16Peak);
          System.out.println("full-batch decode step profile, batch " + b + ", " + threads + " thread(s) (mean of " + r.decodeSteps() + " steps):");
          System.out.println(Report.profile(profiles.decode.ops(), r.decodeSteps(), r.decodeSecondsTotal(), light));
          var p = profiles.prompt;
          System.out.printf(java.util.Locale.ROOT, "prompt step profile, batch %d, %d thread(s) (mean of %d steps with prompt tokens, %.0f tokens a step):%n",
              b, threads, p.steps(), p.tokensPerStep());
          System.out.println(Report.profile(p.ops(), p.steps(), p.seconds(), light));
        }
      }
    }
    try (NativeKernels probe = NativeKernels.create(1)) {
      System.out.println(Report.machine() + ", native kernels: " + probe.isa().key());
    }
    System.out.println(Report.table(results));
    if (json != null) Report.writeJson(json, results);
  }

  /** A bandwidth measured when asked, GB/s. */
  interface Bandwidth {
    double gbps() throws InterruptedException;
  }

  /** Triad GB/s, best of 8 passes after 2 unmeasured (STREAM's rule). */
  static double triadGbps(StreamTriad triad, int threads) throws InterruptedException {
    return triad.bytesPerPass() / triad.bestSeconds(threads, 8, 2) / 1e9;
  }

  /**
   * A measured run; {@code triadBefore} and {@code triadAfter} GB/s, taken right before and after it.
   *
   * @param decodeTokensPerSecond tokens the full-batch decode steps delivered, per second of their median
   * @param secondsPerDecodeStep the median full-batch decode step
   * @param tokensPerRequestStep tokens a request gained per full-batch step, on average (1 without speculation)
   * @param speculation the measured run's draft counts ({@link SpecDecodeStats#NONE} without speculation)
   */
  record Result(double prefillTokensPerSecond, double decodeTokensPerSecond, double secondsPerDecodeStep, double tokensPerRequestStep,
      long bytesPerDecodeStep, int decodeSteps, double decodeSecondsTotal, SpecDecodeStats speculation, double triadBefore, double triadAfter) {
    Result withTriad(double before, double after) {
      return new Result(prefillTokensPerSecond, decodeTokensPerSecond, secondsPerDecodeStep, tokensPerRequestStep, bytesPerDecodeStep,
          decodeSteps, decodeSecondsTotal, speculation, before, after);
    }

    /** Time per output token: a step's time over the tokens each request gains in it. */
    double secondsPerOutputToken() {
      return secondsPerDecodeStep / tokensPerRequestStep;
    }
  }

  /**
   * Warm-up runs (JIT, workspace) for at least {@code warmUp}, then a measured run of {@code batch} requests, on one
   * runner, with the triad taken right before and right after the measured run: this machine's bandwidth moves by a third within minutes, so the
   * roofline is measured next to the steps it judges. {@code profiles} (null: none) takes the measured run's
   * full-batch decode steps and its steps with prompt tokens apart.
   */
  static Result measure(DeepseekModel model, int batch, int inputLen, int outputLen, int microBatchThreshold, int speculativeTokens,
      StepProfiles profiles, Progress progress, java.time.Duration warmUp, Bandwidth triad) throws InterruptedException {
    int pageSize = 16, pagesPerRequest = (inputLen + outputLen + speculativeTokens + pageSize - 1) / pageSize; // + drafts and lookahead
    var kvConfig = new KvCacheConfig(batch * pagesPerRequest + 1, pageSize, false);
    var experts = new CountingExperts(model.localExperts());
    long kvBytesPerToken = (long) model.config().latentDim() * model.precision().kvCacheDType().byteSize() * model.config().numHiddenLayers();
    try (var runner = new DeepseekRunner(model, experts, kvConfig, KvConnector.NONE, null, microBatchThreshold, speculativeTokens)) {
      // warm-up runs for at least warmUp, so the JIT is done with the step's code: measured while it still compiled, a
      // first batch of 1 ran at half speed (the compiler threads take the cores the kernels use)
      long warmUpEnd = System.nanoTime() + warmUp.toNanos();
      do {
        run(model, new TimedRunner(runner, experts, batch, kvBytesPerToken, null), kvConfig, speculativeTokens, batch, Math.min(inputLen, 128),
            Math.min(outputLen, 64), null);
      } while (System.nanoTime() < warmUpEnd);
      double before = triad.gbps();
      if (profiles != null) profiles.profiler.reset();
      Result r = run(model, new TimedRunner(runner, experts, batch, kvBytesPerToken, profiles), kvConfig, speculativeTokens, batch, inputLen,
          outputLen, progress);
      return r.withTriad(before, triad.gbps());
    }
  }

  /** Runs {@code batch} requests to completion through an engine core driven on this thread. */
  static Result run(DeepseekModel model, TimedRunner timed, KvCacheConfig kvConfig, int speculativeTokens, int batch, int inputLen,
      int outputLen, Progress progress) {
    var kv = new KvCacheManager(kvConfig.numPages(), kvConfig.pageSize(), model.modelId(), false);
    var scheduler = new Scheduler(new SchedulerConfig(Math.max(2048, batch), batch, SchedulerConfig.Policy.FCFS, true), kv,
        ModelLimits.of(model.config()), speculativeTokens);
    var core = new EngineCore(scheduler, timed, kv); // not closed: the runner outlives it
    var random = new SplittableRandom(batch);
    // ordinary ids: past the special tokens at the start of a vocabulary, within a small model's
    int endId = Math.min(4000, model.config().vocabSize()), firstId = Math.min(300, endId / 2);
    var params = SamplingParams.greedy().toBuilder().ignoreEos(true).build();
    for (int i = 0; i < batch; i++)
      core.add(GenerationRequest.of("b" + i, random.ints(inputLen, firstId, endId).toArray(), params, outputLen));
    long start = System.nanoTime(), allStarted = 0, lastReport = start;
    var started = new java.util.HashSet<String>();
    while (core.hasRequests()) {
      for (RequestOutput out : core.step()) started.add(out.requestId());
      long now = System.nanoTime();
      if (allStarted == 0 && started.size() == batch) allStarted = now;
      if (progress != null && now - lastReport > 10_000_000_000L) {
        var s = core.stats();
        progress.log("  batch %d: %d of %d prompt tokens, %d of %d output tokens", batch, s.promptTokens(),
            (long) batch * inputLen, s.generatedTokens(), (long) batch * outputLen);
        lastReport = now;
      }
    }
    double prefillSeconds = (allStarted - start) / 1e9, step = timed.medianSeconds();
    double tokensPerRequestStep = (double) timed.delivered / timed.stepSeconds.size() / batch;
    return new Result(batch * (double) inputLen / prefillSeconds, batch * tokensPerRequestStep / step, step, tokensPerRequestStep,
        model.denseWeightBytes() + timed.meanBytes(), timed.stepSeconds.size(), timed.stepSeconds.stream().mapToDouble(Double::doubleValue).sum(),
        core.stats().speculation(), Double.NaN, Double.NaN);
  }

  /**
   * Times the runner's steps in which all {@code batch} requests decode (each its last token, plus its drafts with
   * speculation), and counts the tokens they delivered.
   */
  private static final class TimedRunner implements ModelRunner {
    final ModelRunner runner;
    final CountingExperts experts;
    final int batch;
    final long kvBytesPerToken;
    final StepProfiles profiles; // null: none
    final List<Double> stepSeconds = new ArrayList<>();
    long bytes; // routed experts + KV, summed over timed steps
    long delivered; // tokens the timed steps gave their requests: accepted drafts + the sampled token

    TimedRunner(ModelRunner runner, CountingExperts experts, int batch, long kvBytesPerToken, StepProfiles profiles) {
      this.runner = runner;
      this.profiles = profiles;
      this.experts = experts;
      this.batch = batch;
      this.kvBytesPerToken = kvBytesPerToken;
    }

    @Override
    public RunnerOutput execute(SchedulerOutput plan) {
      boolean fullDecode = plan.chunks().size() == batch
          && plan.chunks().stream().allMatch(c -> c.numTokens() == 1 + c.numDraftTokens() && c.startPosition() >= c.numPromptTokens());
      experts.takeRoutedBytes();
      long t0 = System.nanoTime();
      RunnerOutput out = runner.execute(plan);
      long t1 = System.nanoTime();
      long routed = experts.takeRoutedBytes();
      if (profiles != null) {
        boolean prompt = plan.chunks().stream().anyMatch(c -> c.startPosition() < c.numPromptTokens());
        profiles.stepDone(fullDecode ? profiles.decode : prompt ? profiles.prompt : null, (t1 - t0) / 1e9,
            plan.chunks().stream().mapToLong(ScheduledChunk::numTokens).sum());
      }
      if (fullDecode) {
        stepSeconds.add((t1 - t0) / 1e9);
        bytes += routed;
        for (ScheduledChunk c : plan.chunks()) {
          bytes += (c.startPosition() + 1L) * kvBytesPerToken;
          if (out.sampled().containsKey(c.requestId())) delivered += 1 + out.acceptedOf(c.requestId()).size();
        }
      }
      return out;
    }

    /** The median: a shared 2-core machine throws in outliers that a mean would carry. */
    double medianSeconds() {
      if (stepSeconds.isEmpty()) throw new IllegalStateException("no step had all " + batch + " requests decoding");
      double[] sorted = stepSeconds.stream().mapToDouble(Double::doubleValue).sorted().toArray();
      return sorted[sorted.length / 2];
    }

    long meanBytes() {
      return bytes / Math.max(1, stepSeconds.size());
    }
  }
}
