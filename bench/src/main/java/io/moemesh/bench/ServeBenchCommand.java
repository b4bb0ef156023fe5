package io.moemesh.bench;

import io.moemesh.cli.Cli;
import io.moemesh.cli.HelpOption;
import java.net.URI;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code bench serve}'s command line: {@link ServeOptions}. The defaults that depend on the load (the cap on requests
 * in flight, the warm-up) are resolved in {@link #options()}.
 */
@Command(name = "serve", sortOptions = false, sortSynopsis = false, description = {
    "vLLM's serving benchmark against a running server (e.g. bin/moemesh up): N random prompts of exactly I token ids"
        + " (after P ids all prompts share), streamed through URL's /v1/completions with max_tokens = O and ignore_eos,"
        + " C at once; reports TTFT, TPOT, ITL and end-to-end latency (mean, p50, p90, p99), the request and token"
        + " throughputs, and goodput under --goodput's bounds. Progress goes to stderr, the table to stdout."})
final class ServeBenchCommand implements Callable<Integer> {
  @Mixin HelpOption help;
  @Spec CommandSpec spec;

  @Option(names = "--url", required = true, paramLabel = "URL",
      description = "The server (http://HOST:PORT), its /v1, or the completions endpoint.")
  String url;

  @Option(names = {"--concurrency", "--max-concurrency"}, paramLabel = "C", description = "Requests at once in a closed loop"
      + " (default: 1); with --request-rate or --ramp, the cap on requests in flight (default: none).")
  Integer concurrency;

  @Option(names = "--num-prompts", paramLabel = "N", description = "Measured requests (default: 64; a ramp's are what its"
      + " schedule gives).")
  Integer numPrompts;

  @Option(names = "--input-len", paramLabel = "I", description = "Random prompt ids per request (default: ${DEFAULT-VALUE}).")
  int inputLen = 1024;

  @Option(names = "--output-len", paramLabel = "O", description = "max_tokens per request (default: ${DEFAULT-VALUE}).")
  int outputLen = 128;

  @Option(names = "--prefix-len", paramLabel = "P", description = "Ids every prompt (warm-up ones too) starts with, before its"
      + " I random ones: a prefix-caching workload (default: ${DEFAULT-VALUE}).")
  int prefixLen = 0;

  @Option(names = "--request-rate", paramLabel = "R", description = "Poisson arrivals at R requests/s, whatever the answers"
      + " (exponential gaps from the seed; inf: all at once).")
  String requestRate;

  @Option(names = "--ramp", paramLabel = "R:S[,R:S...]", description = "Poisson arrivals at each phase's rate R for its S seconds"
      + " (a rate may be 0: a pause), e.g. 2:60,8:120,2:60; figures also per phase.")
  String ramp;

  @Option(names = "--goodput", arity = "1..*", paramLabel = "NAME:MS", description = "Bounds in ms on ttft, tpot or e2el, e.g."
      + " ttft:500 tpot:50: a request is good when it meets every one; reports good requests/s.")
  List<String> goodput;

  @Option(names = "--json", paramLabel = "FILE", description = "Every figure, the timeline and the phases; the PNG chart goes"
      + " beside it as FILE.png.")
  Path json;

  @Option(names = "--charts", paramLabel = "DIR", description = "Where the PNG chart (TTFT and TPOT p50/p90/p99, offered and"
      + " achieved request rate, replicas) goes instead.")
  Path charts;

  @Option(names = "--window", paramLabel = "S", description = "The chart's and timeline's time step in seconds (default: ${DEFAULT-VALUE}).")
  double window = 5;

  @Option(names = "--planner-metrics", paramLabel = "URL", description = "A planner's /q/metrics, scraped every second for its"
      + " replicas per stage.")
  String plannerMetrics;

  @Option(names = "--model-name", paramLabel = "M", description = "The model to ask for (default: the first /v1/models lists).")
  String modelName;

  @Option(names = "--tokenizer", paramLabel = "DIR", description = "The model directory whose tokenizer gives the prompt ids"
      + " (default: the demo model M in $MOEMESH_HOME/models).")
  Path tokenizer;

  @Option(names = "--seed", paramLabel = "S", description = "The prompts' and arrivals' seed (default: ${DEFAULT-VALUE}).")
  long seed = 0;

  @Option(names = "--warmup", paramLabel = "W", description = "Requests sent first and not counted (default: C; 1 with a rate).")
  Integer warmup;

  @Option(names = "--spec-metrics", split = ",", paramLabel = "URL", description = "The decode replicas (e.g."
      + " http://localhost:9300), whose vllm:spec_decode_* counters give the measured requests' draft acceptance.")
  List<String> specMetrics;

  ServeOptions options() {
    if (concurrency != null) Cli.atLeast(spec, "--concurrency", concurrency, 1);
    if (numPrompts != null) Cli.atLeast(spec, "--num-prompts", numPrompts, 1);
    Cli.atLeast(spec, "--input-len", inputLen, 1);
    Cli.atLeast(spec, "--output-len", outputLen, 1);
    if (prefixLen < 0) throw Cli.usageError(spec, "--prefix-len must not be negative, got " + prefixLen);
    if (warmup != null && warmup < 0) throw Cli.usageError(spec, "--warmup must not be negative, got " + warmup);
    if (!(window > 0) || Double.isInfinite(window)) throw Cli.usageError(spec, "--window must be a number of seconds > 0, got " + window);
    if (requestRate != null && ramp != null)
      throw Cli.usageError(spec, "--request-rate and --ramp exclude each other: a ramp gives each phase its rate");
    if (ramp != null && numPrompts != null)
      throw Cli.usageError(spec, "--ramp sets the number of requests (its phases' arrivals): drop --num-prompts");
    Load load;
    Slos slos;
    try {
      load = ramp != null ? new Load.Ramp(RatePhase.parseAll("--ramp", ramp))
          : requestRate != null ? new Load.Poisson(rate("--request-rate", requestRate)) : new Load.ClosedLoop();
      slos = goodput == null ? Slos.NONE : Slos.parse("--goodput", goodput);
    } catch (IllegalArgumentException e) {
      throw Cli.usageError(spec, e.getMessage());
    }
    boolean open = !(load instanceof Load.ClosedLoop);
    int inFlight = concurrency != null ? concurrency : open ? ServeOptions.UNLIMITED : 1;
    int warm = warmup != null ? warmup : open ? 1 : inFlight;
    List<URI> speculation = specMetrics == null ? List.of() : specMetrics.stream().map(v -> httpUrl("--spec-metrics", v)).toList();
    URI planner = plannerMetrics == null ? null : httpUrl("--planner-metrics", plannerMetrics);
    URI endpoint;
    try {
      endpoint = ServeClient.completionsEndpoint(url.strip());
    } catch (IllegalArgumentException e) {
      throw Cli.usageError(spec, "--url: '" + url + "' is not a URL");
    }
    return new ServeOptions(endpoint, inFlight, numPrompts != null ? numPrompts : 64, inputLen, prefixLen, outputLen, json, modelName,
        tokenizer, seed, warm, speculation, load, slos, charts, planner, window);
  }

  @Override
  public Integer call() throws Exception {
    ServeBench.run(options());
    return 0;
  }

  /** Requests per second: a finite number > 0, or {@code inf} (vLLM's default: every request at once). */
  private double rate(String name, String value) {
    String v = value.strip();
    if (v.equalsIgnoreCase("inf") || v.equalsIgnoreCase("infinity")) return Double.POSITIVE_INFINITY;
    double r;
    try {
      r = Double.parseDouble(v);
    } catch (NumberFormatException e) {
      throw Cli.usageError(spec, name + " must be a number of requests per second or 'inf', got '" + value + "'");
    }
    if (!(r > 0) || Double.isInfinite(r)) throw Cli.usageError(spec, name + " must be > 0 requests per second (or 'inf'), got " + v);
    return r;
  }

  private URI httpUrl(String name, String value) {
    URI uri;
    try {
      uri = URI.create(value.strip());
    } catch (IllegalArgumentException e) {
      throw Cli.usageError(spec, name + ": '" + value.strip() + "' is not a URL");
    }
    if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null)
      throw Cli.usageError(spec, name + " needs http(s)://HOST:PORT[/PATH] URLs, got '" + value.strip() + "'");
    return uri;
  }
}
