package io.moemesh.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.moemesh.cli.Cli;
import io.moemesh.tokenizer.Tokenizer;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code bench profile}: measures what one prefill and one decode replica of a running mesh sustain at the planner's
 * targets and writes the profile JSON the planner reads (docs/planner.md, "Profile"). Two sweeps of closed-loop steps
 * through the gateway, the concurrency doubling from 1 until a step misses its target (or {@code --max-concurrency}):
 * prefill with prompts of I tokens and 1 output token (the prompt tokens/s one prefill replica computes while the p90
 * TTFT stays under the target), then decode with I and O tokens (the requests one decode replica runs at once while
 * the p90 ITL stays under it). The mesh must have one replica of each stage ({@code bin/moemesh up --decode-replicas 1}).
 */
public final class ProfileBench {
  private ProfileBench() {}

  record Options(URI endpoint, double ttftTargetMs, double itlTargetMs, int inputLen, int outputLen, int maxConcurrency,
      int requestsPerClient, int warmup, Path out, String modelName, Path tokenizer, long seed) {
    /** The options {@code bench profile ARGS} runs with; a usage error is a picocli {@code ParameterException}. */
    static Options parse(String... args) {
      return Cli.parse(new ProfileBenchCommand(), args).options();
    }
  }

  /** Sweeps the mesh, then writes the profile; no step meeting a target is an {@link IllegalStateException}. */
  static void run(Options o) throws IOException, InterruptedException {
    var progress = new Progress();
    String model = o.modelName() != null ? o.modelName() : ServeClient.servedModel(o.endpoint(), Duration.ofSeconds(10));
    Path tokenizerDir = o.tokenizer() != null ? o.tokenizer() : ServeBench.demoModelDir(model);
    int[] ids;
    try (var tokenizer = Tokenizer.load(tokenizerDir)) {
      ids = RandomPrompts.ordinaryIds(tokenizer);
    }
    var client = new ServeClient(o.endpoint(), model, ServeBench.REQUEST_TIMEOUT);
    double ttftTarget = o.ttftTargetMs() / 1000, itlTarget = o.itlTargetMs() / 1000;

    progress.log("prefill: %d-token prompts, 1 output token; p90 TTFT target %.0f ms", o.inputLen(), o.ttftTargetMs());
    List<ProfileSteps.Step> prefill = sweep(o, client, ids, 1, s -> s.meetsTtft(ttftTarget), progress);
    progress.log("decode: %d-token prompts, %d output tokens; p90 ITL target %.0f ms", o.inputLen(), o.outputLen(), o.itlTargetMs());
    List<ProfileSteps.Step> decode = sweep(o, client, ids, o.outputLen(), s -> s.meetsItl(itlTarget), progress);

    ProfileSteps.Capacity p = ProfileSteps.prefill(prefill, ttftTarget), d = ProfileSteps.decode(decode, itlTarget);
    if (p == null) {
      throw new IllegalStateException(String.format(Locale.ROOT, "no prefill step met the TTFT target: one request at a time had a"
          + " p90 TTFT of %.0f ms (a higher --ttft-target or a shorter --input-len)", prefill.getFirst().ttftP90() * 1000));
    }
    if (d == null) {
      throw new IllegalStateException(String.format(Locale.ROOT, "no decode step met the ITL target: one request at a time had a"
          + " p90 ITL of %.1f ms (a higher --itl-target)", decode.getFirst().itlP90() * 1000));
    }
    for (var c : List.of(p, d)) {
      if (!c.targetReached()) progress.log("a stage met its target at every step up to %d: its figure is a lower bound", o.maxConcurrency());
    }
    String json = profileJson(p.perReplica(), o.ttftTargetMs(), d.perReplica(), o.itlTargetMs(), measuredOn(model, o));
    if (o.out() == null) {
      System.out.println(json);
    } else {
      Files.writeString(o.out(), json + "\n");
      progress.log("profile: %s (prefill %.0f prompt tokens/s at c=%d, decode %.1f requests at c=%d)", o.out(), p.perReplica(),
          p.atConcurrency(), d.perReplica(), d.atConcurrency());
    }
  }

  /** Steps at concurrency 1, 2, 4, ... until one misses its target or the maximum is reached. */
  private static List<ProfileSteps.Step> sweep(Options o, ServeClient client, int[] ids, int outputLen,
      java.util.function.Predicate<ProfileSteps.Step> meets, Progress progress) throws InterruptedException {
    List<ProfileSteps.Step> steps = new ArrayList<>();
    ServeBench.sendAll(client, RandomPrompts.draw(ids, o.warmup(), o.inputLen(), ~o.seed()), outputLen, 1, null); // the JIT, the caches
    for (int c = 1; c <= o.maxConcurrency(); c *= 2) {
      List<int[]> warm = RandomPrompts.draw(ids, c, o.inputLen(), ~(o.seed() + c));
      ServeBench.sendAll(client, warm, outputLen, c, null);
      List<int[]> prompts = RandomPrompts.draw(ids, c * o.requestsPerClient(), o.inputLen(), o.seed() * 31 + c);
      long start = System.nanoTime();
      List<RequestResult> results = ServeBench.sendAll(client, prompts, outputLen, c, null);
      var step = ProfileSteps.Step.of(c, results, ServeClient.seconds(start, System.nanoTime()));
      steps.add(step);
      progress.log("  c=%-3d %3d done %d failed  TTFT p90 %7.1f ms  ITL p90 %6.1f ms  prompt tokens/s %8.0f  in decode %5.1f  %s", c,
          step.completed(), step.failed(), step.ttftP90() * 1000, step.itlP90() * 1000, step.promptTokensPerSecond(),
          step.decodeConcurrency(), meets.test(step) ? "met" : "missed");
      if (!meets.test(step)) break;
    }
    return steps;
  }

  /** The planner's profile format (planner's {@code Profile.parse} reads it). */
  static String profileJson(double prefillTokensPerSecond, double ttftTargetMs, double decodeConcurrency, double itlTargetMs,
      String measuredOn) {
    var mapper = new ObjectMapper();
    var root = mapper.createObjectNode();
    root.putObject("prefill").put("tokensPerSecondPerReplica", Math.round(prefillTokensPerSecond)).put("ttftTargetMs", ttftTargetMs);
    root.putObject("decode").put("concurrencyPerReplica", Math.round(decodeConcurrency * 10) / 10.0).put("itlTargetMs", itlTargetMs);
    root.put("measuredOn", measuredOn);
    return root.toPrettyString();
  }

  /** Date, CPU, cores, the kernels' widest ISA the CPU has, model and workload: what the figures hold for. */
  private static String measuredOn(String model, Options o) {
    String cpu = "unknown CPU", isa = "portable";
    try {
      List<String> info = Files.readAllLines(Path.of("/proc/cpuinfo"));
      cpu = info.stream().filter(l -> l.startsWith("model name")).map(l -> l.substring(l.indexOf(':') + 1).strip()).findFirst().orElse(cpu);
      String flags = info.stream().filter(l -> l.startsWith("flags")).findFirst().orElse("");
      isa = flags.contains(" avx512f") ? "avx512" : flags.contains(" avx2") ? "avx2" : "portable";
    } catch (IOException notLinux) {
      // the defaults
    }
    return String.format(Locale.ROOT, "%s, %s (%s), %d cores, model %s, %d prompt / %d output tokens, bench profile",
        LocalDate.now(ZoneOffset.UTC), cpu, isa, Runtime.getRuntime().availableProcessors(), model, o.inputLen(), o.outputLen());
  }
}
