package io.moemesh.bench;

import io.moemesh.tokenizer.Tokenizer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code bench serve}: the serving benchmark of vLLM's {@code benchmarks/serve} against any OpenAI-compatible
 * server — random prompts of exactly I tokens ({@link RandomPrompts}), each streamed through {@code /v1/completions}
 * with {@code max_tokens = O} and {@code ignore_eos} ({@link ServeClient}), after W warm-up requests that are not
 * counted. The {@link Load} says when the measured requests go: C in flight at once (a closed loop: a request starts
 * when one ends), or at the times of an {@link ArrivalSchedule} (Poisson at one rate, or a ramp of rates) whatever
 * the answers. Reports TTFT, TPOT, ITL and end-to-end latency, request and token throughput and goodput under
 * {@link Slos} ({@link ServeStats}), over time and per ramp phase ({@link Timeline}): progress on stderr, the table
 * on stdout, every figure to {@code --json}, a chart beside it ({@link ServeCharts}).
 */
public final class ServeBench {
  static final Duration REQUEST_TIMEOUT = Duration.ofMinutes(30);
  static final Duration METRICS_TIMEOUT = Duration.ofSeconds(10);

  private ServeBench() {}

  /** Runs the benchmark the options describe against their server; prints the report. */
  static void run(ServeOptions options) throws IOException, InterruptedException {
    var progress = new Progress();
    String model;
    try {
      model = options.modelName() != null ? options.modelName() : ServeClient.servedModel(options.endpoint(), Duration.ofSeconds(10));
    } catch (IOException e) {
      throw new IOException("cannot list the models of " + options.endpoint() + " (is the server up?): " + e, e);
    }
    Path tokenizerDir = options.tokenizer() != null ? options.tokenizer() : demoModelDir(model);
    if (!Files.isRegularFile(tokenizerDir.resolve(Tokenizer.FILE_NAME))) {
      throw new IllegalStateException("no " + Tokenizer.FILE_NAME + " in " + tokenizerDir + ": give the model directory as --tokenizer DIR");
    }
    int[] ids;
    try (var tokenizer = Tokenizer.load(tokenizerDir)) {
      ids = RandomPrompts.ordinaryIds(tokenizer);
    }
    var client = new ServeClient(options.endpoint(), model, REQUEST_TIMEOUT);
    Result result = run(options, client, ids, progress);
    ServeStats stats = report(options, model, result, progress);
    if (stats.completed() == 0) throw new IllegalStateException("no request completed");
  }

  /** The table (and per-phase table) on stdout, the JSON and the chart where the options say; the overall figures. */
  static ServeStats report(ServeOptions options, String model, Result result, Progress progress) throws IOException {
    ServeStats stats = ServeStats.of(result.results(), result.durationSeconds(), options.slos());
    Timeline timeline = result.timeline(options);
    List<String> errors = distinctErrors(result.results());
    errors.forEach(e -> progress.log("failed: %s", e));
    System.out.print(ServeReport.table(options, model, stats, result.speculation()) + ServeReport.phaseTable(timeline));
    if (options.json() != null) {
      ServeReport.writeJson(options.json(), ServeReport.json(options, model, stats, errors, result.speculation(), timeline, result.replicas()));
      progress.log("figures: %s", options.json());
    }
    Path chart = options.chartFile();
    if (chart != null) {
      ServeCharts.write(chart, ServeCharts.Figure.of(options, model, timeline, result), ServeCharts.WIDTH, ServeCharts.height(!result.replicas().isEmpty()));
      progress.log("chart: %s", chart);
    }
    return stats;
  }

  /**
   * The measured requests (in prompt order), the run's wall-clock seconds, the speculative decoding counters the
   * {@code --spec-metrics} replicas gained meanwhile (null when none are given), the arrival schedule (null for a
   * closed loop) and the planner's replica counts over the run (empty without {@code --planner-metrics}).
   */
  record Result(List<TimedResult> requests, double durationSeconds, SpecDecodeCounts speculation, ArrivalSchedule schedule,
      List<PlannerReplicas.Sample> replicas) {
    List<RequestResult> results() {
      return requests.stream().map(TimedResult::result).toList();
    }

    Timeline timeline(ServeOptions o) {
      return Timeline.of(requests, durationSeconds, o.load(), schedule, o.slos(), o.windowSeconds());
    }
  }

  /** Warm-up requests, then the measured ones; prompts are drawn from {@code ids} with the options' seed. */
  static Result run(ServeOptions o, ServeClient client, int[] ids, Progress progress) throws InterruptedException, IOException {
    int[] prefix = o.prefixLen() == 0 ? new int[0] : RandomPrompts.draw(ids, 1, o.prefixLen(), o.seed() * 31 + 17).getFirst();
    if (o.warmup() > 0) {
      progress.log("warm-up: %d request(s) of %d prompt tokens, %d output tokens, %d at once", o.warmup(), o.prefixLen() + o.inputLen(),
          o.outputLen(), Math.min(o.concurrency(), o.warmup()));
      List<RequestResult> warm = sendAll(client, RandomPrompts.withPrefix(prefix, RandomPrompts.draw(ids, o.warmup(), o.inputLen(), ~o.seed())),
          o.outputLen(), o.concurrency(), null);
      RequestResult failed = warm.stream().filter(r -> !r.ok()).findFirst().orElse(null);
      if (failed != null) throw new IllegalStateException("the warm-up request failed: " + failed.error());
    }
    ArrivalSchedule schedule = ArrivalSchedule.of(o.load(), o.numPrompts(), o.seed() * 131 + 7);
    int count = schedule == null ? o.numPrompts() : schedule.size();
    if (count == 0) throw new IllegalStateException("the schedule " + o.load().describe() + " sends no request (try longer phases)");
    progress.log("%d request(s) to %s, %s, %s", count, o.endpoint(), o.load().describe(),
        o.concurrency() == ServeOptions.UNLIMITED ? "no cap on requests in flight" : o.concurrency() + " at most in flight");
    List<int[]> prompts = RandomPrompts.withPrefix(prefix, RandomPrompts.draw(ids, count, o.inputLen(), o.seed()));
    SpecDecodeCounts before = o.specMetrics().isEmpty() ? null : SpecDecodeCounts.scrape(o.specMetrics(), METRICS_TIMEOUT);
    long start = System.nanoTime();
    List<TimedResult> results;
    List<PlannerReplicas.Sample> replicas = List.of();
    try (var planner = o.plannerMetrics() == null ? null : new PlannerReplicas(o.plannerMetrics(), start)) {
      results = schedule == null ? sendAll(client, prompts, o.outputLen(), o.concurrency(), progress, start)
          : sendScheduled(client, prompts, o.outputLen(), schedule, o.concurrency(), progress, start);
      if (planner != null) {
        replicas = planner.samples();
        if (planner.failures() > 0) progress.log("planner metrics: %d scrape(s) failed, the last: %s", planner.failures(), planner.lastFailure());
      }
    }
    double seconds = ServeClient.seconds(start, System.nanoTime());
    SpecDecodeCounts speculation = before == null ? null : SpecDecodeCounts.scrape(o.specMetrics(), METRICS_TIMEOUT).minus(before);
    return new Result(results, seconds, speculation, schedule, replicas);
  }

  /** Every prompt through {@code client}, {@code concurrency} at once: each worker takes the next prompt when free. */
  static List<RequestResult> sendAll(ServeClient client, List<int[]> prompts, int maxTokens, int concurrency, Progress progress)
      throws InterruptedException {
    return sendAll(client, prompts, maxTokens, concurrency, progress, System.nanoTime()).stream().map(TimedResult::result).toList();
  }

  private static List<TimedResult> sendAll(ServeClient client, List<int[]> prompts, int maxTokens, int concurrency, Progress progress,
      long start) throws InterruptedException {
    TimedResult[] results = new TimedResult[prompts.size()];
    var next = new AtomicInteger();
    var tally = new Tally(prompts.size(), progress);
    try (var workers = Executors.newVirtualThreadPerTaskExecutor()) {
      for (int w = 0; w < Math.min(concurrency, prompts.size()); w++) {
        workers.submit(() -> {
          for (int i = next.getAndIncrement(); i < prompts.size(); i = next.getAndIncrement()) {
            results[i] = send(client, prompts.get(i), maxTokens, start, 0);
            tally.done(results[i].result());
          }
        });
      }
    } // close() waits for every worker
    if (Thread.interrupted()) throw new InterruptedException();
    return new ArrayList<>(Arrays.asList(results));
  }

  /**
   * An open loop: prompt i is sent at {@code schedule.sendSeconds(i)} after {@code start}, whatever the answers, on
   * its own virtual thread; with a cap, it waits (in arrival order) for one of {@code maxInFlight} slots, and is timed
   * from when it gets one (as vLLM's {@code --max-concurrency}).
   */
  static List<TimedResult> sendScheduled(ServeClient client, List<int[]> prompts, int maxTokens, ArrivalSchedule schedule, int maxInFlight,
      Progress progress, long start) throws InterruptedException {
    TimedResult[] results = new TimedResult[prompts.size()];
    var slots = new Semaphore(Math.min(maxInFlight, prompts.size()), true);
    var tally = new Tally(prompts.size(), progress);
    int phase = -1;
    try (var senders = Executors.newVirtualThreadPerTaskExecutor()) {
      for (int i = 0; i < prompts.size(); i++) {
        if (progress != null && !schedule.phases().isEmpty() && schedule.phaseOf(i) != phase) {
          phase = schedule.phaseOf(i);
          progress.log("phase %d: %s", phase + 1, schedule.phases().get(phase));
        }
        long wait = start + (long) (schedule.sendSeconds(i) * 1e9) - System.nanoTime();
        if (wait > 0) Thread.sleep(Duration.ofNanos(wait));
        int request = i, inPhase = schedule.phaseOf(i);
        senders.submit(() -> {
          slots.acquireUninterruptibly();
          try {
            results[request] = send(client, prompts.get(request), maxTokens, start, inPhase);
          } finally {
            slots.release();
          }
          tally.done(results[request].result());
        });
      }
    } // close() waits for every request
    return new ArrayList<>(Arrays.asList(results));
  }

  private static TimedResult send(ServeClient client, int[] prompt, int maxTokens, long start, int phase) {
    double sent = ServeClient.seconds(start, System.nanoTime());
    return new TimedResult(sent, phase, client.complete(prompt, maxTokens));
  }

  /** Counts finished requests and logs every tenth of them. */
  private static final class Tally {
    private final int total, step;
    private final Progress progress;
    private final AtomicInteger done = new AtomicInteger(), failed = new AtomicInteger();

    Tally(int total, Progress progress) {
      this.total = total;
      this.step = Math.max(1, total / 10);
      this.progress = progress;
    }

    void done(RequestResult r) {
      if (!r.ok()) failed.incrementAndGet();
      int n = done.incrementAndGet();
      if (progress != null && (n % step == 0 || n == total)) progress.log("  %d of %d done (%d failed)", n, total, failed.get());
    }
  }

  private static List<String> distinctErrors(List<RequestResult> results) {
    var errors = new LinkedHashSet<String>();
    for (RequestResult r : results) if (!r.ok() && errors.size() < 5) errors.add(r.error());
    return List.copyOf(errors);
  }

  /** The demo model of that name: the trained one in the repository, or where {@code bin/moemesh} caches the others. */
  static Path demoModelDir(String model) throws IOException {
    if (model.equals(io.moemesh.cli.DemoModels.DEFAULT)) return io.moemesh.cli.DemoModels.ensure(model);
    String home = System.getenv("MOEMESH_HOME");
    Path base = home != null && !home.isBlank() ? Path.of(home) : Path.of(System.getProperty("user.home"), ".cache", "moemesh");
    return base.resolve("models").resolve(model);
  }
}
