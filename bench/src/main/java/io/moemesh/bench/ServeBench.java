package io.moemesh.bench;

import io.moemesh.model.tokenizer.Tokenizer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code bench serve}: the serving benchmark of vLLM's {@code benchmarks/serve} against any OpenAI-compatible
 * server — N random prompts of exactly I tokens ({@link RandomPrompts}), each streamed through
 * {@code /v1/completions} with {@code max_tokens = O} and {@code ignore_eos} ({@link ServeClient}), C in flight at
 * once (a closed loop: a request starts when one ends), after W warm-up requests that are not counted. Reports
 * TTFT, TPOT, ITL and end-to-end latency, request and token throughput ({@link ServeStats}): progress on stderr,
 * the table on stdout, every figure to {@code --json}.
 */
public final class ServeBench {
  static final Duration REQUEST_TIMEOUT = Duration.ofMinutes(30);
  static final Duration METRICS_TIMEOUT = Duration.ofSeconds(10);

  private ServeBench() {}

  public static void main(String[] args) throws InterruptedException {
    ServeOptions options;
    try {
      options = ServeOptions.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("bench serve: " + e.getMessage());
      System.err.println(ServeOptions.USAGE);
      System.exit(2);
      return;
    }
    if (options.help()) {
      System.out.println(ServeOptions.USAGE);
      return;
    }
    try {
      run(options);
    } catch (IOException | IllegalStateException e) {
      System.err.println("bench serve: " + e.getMessage());
      System.exit(1);
    }
  }

  private static void run(ServeOptions options) throws IOException, InterruptedException {
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
    ServeStats stats = ServeStats.of(result.results(), result.durationSeconds());
    List<String> errors = distinctErrors(result.results());
    errors.forEach(e -> progress.log("failed: %s", e));
    System.out.print(ServeReport.table(options, model, stats, result.speculation()));
    if (options.json() != null) ServeReport.writeJson(options.json(), ServeReport.json(options, model, stats, errors, result.speculation()));
    if (stats.completed() == 0) throw new IllegalStateException("no request completed");
  }

  /**
   * The measured requests' results (in prompt order), the run's wall-clock seconds, and the speculative decoding
   * counters the {@code --spec-metrics} replicas gained meanwhile (null when none are given).
   */
  record Result(List<RequestResult> results, double durationSeconds, SpecDecodeCounts speculation) {}

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
    progress.log("%d request(s) to %s, %d at once", o.numPrompts(), o.endpoint(), o.concurrency());
    List<int[]> prompts = RandomPrompts.withPrefix(prefix, RandomPrompts.draw(ids, o.numPrompts(), o.inputLen(), o.seed()));
    SpecDecodeCounts before = o.specMetrics().isEmpty() ? null : SpecDecodeCounts.scrape(o.specMetrics(), METRICS_TIMEOUT);
    long start = System.nanoTime();
    List<RequestResult> results = sendAll(client, prompts, o.outputLen(), o.concurrency(), progress);
    double seconds = ServeClient.seconds(start, System.nanoTime());
    SpecDecodeCounts speculation = before == null ? null : SpecDecodeCounts.scrape(o.specMetrics(), METRICS_TIMEOUT).minus(before);
    return new Result(results, seconds, speculation);
  }

  /** Every prompt through {@code client}, {@code concurrency} at once: each worker takes the next prompt when free. */
  static List<RequestResult> sendAll(ServeClient client, List<int[]> prompts, int maxTokens, int concurrency, Progress progress)
      throws InterruptedException {
    RequestResult[] results = new RequestResult[prompts.size()];
    var next = new AtomicInteger();
    var done = new AtomicInteger();
    var failed = new AtomicInteger();
    int step = Math.max(1, prompts.size() / 10);
    try (var workers = Executors.newVirtualThreadPerTaskExecutor()) {
      for (int w = 0; w < Math.min(concurrency, prompts.size()); w++) {
        workers.submit(() -> {
          for (int i = next.getAndIncrement(); i < prompts.size(); i = next.getAndIncrement()) {
            results[i] = client.complete(prompts.get(i), maxTokens);
            if (!results[i].ok()) failed.incrementAndGet();
            int n = done.incrementAndGet();
            if (progress != null && (n % step == 0 || n == prompts.size())) {
              progress.log("  %d of %d done (%d failed)", n, prompts.size(), failed.get());
            }
          }
        });
      }
    } // close() waits for every worker
    if (Thread.interrupted()) throw new InterruptedException();
    return new ArrayList<>(Arrays.asList(results));
  }

  private static List<String> distinctErrors(List<RequestResult> results) {
    var errors = new LinkedHashSet<String>();
    for (RequestResult r : results) if (!r.ok() && errors.size() < 5) errors.add(r.error());
    return List.copyOf(errors);
  }

  /** The demo model of that name: the trained one in the repository, or where {@code bin/moemesh} caches the others. */
  static Path demoModelDir(String model) throws IOException {
    if (model.equals(io.moemesh.engine.cli.DemoModels.DEFAULT)) return io.moemesh.engine.cli.DemoModels.ensure(model);
    String home = System.getenv("MOEMESH_HOME");
    Path base = home != null && !home.isBlank() ? Path.of(home) : Path.of(System.getProperty("user.home"), ".cache", "moemesh");
    return base.resolve("models").resolve(model);
  }
}
