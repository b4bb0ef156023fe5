package io.moemesh.bench;

import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * {@code bench serve}'s options.
 *
 * @param endpoint the completions endpoint ({@code --url} may name the server, {@code …/v1} or the endpoint)
 * @param concurrency a closed loop's workers; an open loop's cap on requests in flight ({@link #UNLIMITED}: none)
 * @param numPrompts measured requests; a ramp's count is what its schedule gives
 * @param modelName the {@code model} to send; null: the first that {@code GET /v1/models} lists
 * @param tokenizer the model directory whose tokenizer gives the prompt ids; null: the demo model of that name
 * @param prefixLen ids every prompt starts with, before its {@code inputLen} random ones (vLLM's {@code --random-prefix-len}):
 *     a prefix-caching workload; 0 = none
 * @param warmup requests sent (at the same concurrency) before the measured ones, and not counted
 * @param specMetrics engine replicas whose {@code /q/metrics} give the measured requests' draft acceptance
 *     (speculative decoding); empty: not reported
 * @param load closed loop, {@code --request-rate} or {@code --ramp}
 * @param slos {@code --goodput}'s bounds; empty: no goodput reported
 * @param charts the directory of the PNG chart; null: beside {@code json} (no chart without either)
 * @param plannerMetrics a planner's metrics, scraped every second for its replica counts; null: none
 * @param windowSeconds the charts' and the timeline's window
 */
record ServeOptions(URI endpoint, int concurrency, int numPrompts, int inputLen, int prefixLen, int outputLen, Path json,
    String modelName, Path tokenizer, long seed, int warmup, List<URI> specMetrics, Load load, Slos slos, Path charts,
    URI plannerMetrics, double windowSeconds, boolean help) {

  static final int UNLIMITED = Integer.MAX_VALUE;

  static final String USAGE = """
      usage: bin/moemesh bench serve --url URL [--concurrency C] [--num-prompts N] [--input-len I] [--output-len O]
                                     [--request-rate R | --ramp R:S[,R:S...]] [--goodput NAME:MS [NAME:MS...]]
                                     [--prefix-len P] [--json FILE] [--charts DIR] [--window SECONDS]
                                     [--planner-metrics URL] [--model-name M] [--tokenizer DIR] [--seed S] [--warmup W]
                                     [--spec-metrics URL[,URL...]]
        N random prompts of exactly I token ids, streamed through URL's /v1/completions with max_tokens = O and
        ignore_eos, C at once; reports TTFT, TPOT, ITL and end-to-end latency (mean, p50, p90, p99) and the
        request and token throughputs. --request-rate R: the N requests arrive as a Poisson process of R per second
        (exponential gaps from the seed; inf: all at once), whatever the answers; C then caps the requests in flight
        (default: no cap). --ramp 2:60,8:120,2:60: Poisson arrivals at each phase's rate for its seconds (a rate may be
        0: a pause); N is what the schedule gives; figures also per phase. --goodput ttft:500 tpot:50 e2el:2000: a
        request is good when it meets every named bound (ms); reports goodput (good requests/s). --json FILE: every
        figure, the timeline and the phases; a PNG chart (TTFT and TPOT p50/p90/p99, offered and achieved request
        rate, and replicas if --planner-metrics) goes beside it as FILE.png, or into --charts DIR; --window: its
        time step (default 5 s). --planner-metrics URL: scraped every second for moemesh_planner_replicas{stage,kind}.
        --prefix-len P: every prompt (warm-up ones too) starts with the same P ids, then its I random ones (a
        prefix-caching workload). --spec-metrics: the decode replicas (e.g. http://localhost:9300), whose
        vllm:spec_decode_* counters, read right before and after the measured requests, give their draft acceptance
        (speculative decoding). Defaults: C = 1 (closed loop), N = 64, I = 1024, O = 128, P = 0, S = 0, W = C (1 with
        a rate); M = what /v1/models lists; DIR = $MOEMESH_HOME/models/M (the demo models' cache).""";

  static ServeOptions parse(String... args) {
    String url = null, model = null;
    Path json = null, tokenizer = null, charts = null;
    int concurrency = -1, numPrompts = -1, inputLen = 1024, prefixLen = 0, outputLen = 128, warmup = -1;
    long seed = 0;
    double windowSeconds = 5;
    List<URI> specMetrics = List.of();
    URI plannerMetrics = null;
    Load.Poisson rate = null;
    Load.Ramp ramp = null;
    Slos slos = Slos.NONE;
    boolean help = false;
    for (int i = 0; i < args.length; i++) {
      String name = args[i], value = null;
      int eq = name.indexOf('=');
      if (name.startsWith("--") && eq > 0) {
        value = name.substring(eq + 1);
        name = name.substring(0, eq);
      }
      if (name.equals("-h") || name.equals("--help")) {
        help = true;
        continue;
      }
      boolean inline = value != null;
      if (value == null) {
        if (i + 1 >= args.length) throw new IllegalArgumentException(name + " needs a value");
        value = args[++i];
      }
      switch (name) {
        case "--url" -> url = value;
        case "--concurrency", "--max-concurrency" -> concurrency = positive(name, value);
        case "--num-prompts" -> numPrompts = positive(name, value);
        case "--input-len" -> inputLen = positive(name, value);
        case "--output-len" -> outputLen = positive(name, value);
        case "--prefix-len" -> prefixLen = nonNegative(name, value);
        case "--json" -> json = Path.of(value);
        case "--charts" -> charts = Path.of(value);
        case "--window" -> windowSeconds = positiveSeconds(name, value);
        case "--model-name" -> model = value;
        case "--tokenizer" -> tokenizer = Path.of(value);
        case "--seed" -> seed = integer(name, value);
        case "--warmup" -> warmup = nonNegative(name, value);
        case "--spec-metrics" -> specMetrics = Arrays.stream(value.split(",")).map(v -> httpUrl("--spec-metrics", v)).toList();
        case "--planner-metrics" -> plannerMetrics = httpUrl(name, value);
        case "--request-rate" -> rate = new Load.Poisson(rate(name, value));
        case "--ramp" -> ramp = new Load.Ramp(RatePhase.parseAll(name, value));
        case "--goodput" -> {
          List<String> values = new ArrayList<>(List.of(value));
          while (!inline && i + 1 < args.length && !args[i + 1].startsWith("-")) values.add(args[++i]); // vLLM: nargs="+"
          slos = Slos.parse(name, values);
        }
        default -> throw new IllegalArgumentException("unknown option '" + name + "'");
      }
    }
    if (rate != null && ramp != null) throw new IllegalArgumentException("--request-rate and --ramp exclude each other: a ramp gives each phase its rate");
    if (ramp != null && numPrompts > 0) throw new IllegalArgumentException("--ramp sets the number of requests (its phases' arrivals): drop --num-prompts");
    Load load = ramp != null ? ramp : rate != null ? rate : new Load.ClosedLoop();
    boolean open = !(load instanceof Load.ClosedLoop);
    int inFlight = concurrency > 0 ? concurrency : open ? UNLIMITED : 1;
    if (help) {
      return new ServeOptions(null, inFlight, numPrompts, inputLen, prefixLen, outputLen, json, model, tokenizer, seed, 0, specMetrics, load, slos,
          charts, plannerMetrics, windowSeconds, true);
    }
    if (url == null) throw new IllegalArgumentException("--url is required (e.g. --url http://localhost:8000)");
    int warm = warmup >= 0 ? warmup : open ? 1 : inFlight;
    return new ServeOptions(ServeClient.completionsEndpoint(url), inFlight, numPrompts > 0 ? numPrompts : 64, inputLen, prefixLen, outputLen,
        json, model, tokenizer, seed, warm, specMetrics, load, slos, charts, plannerMetrics, windowSeconds, false);
  }

  /** Where the PNG chart goes: {@code --charts DIR}, else beside the JSON; null for neither. */
  Path chartFile() {
    String base = json == null ? "serve" : json.getFileName().toString().replaceFirst("\\.json$", "");
    if (charts != null) return charts.resolve(base + ".png");
    return json == null ? null : json.resolveSibling(base + ".png");
  }

  private static int positive(String name, String value) {
    int v = nonNegative(name, value);
    if (v < 1) throw new IllegalArgumentException(name + " must be at least 1, got " + v);
    return v;
  }

  private static int nonNegative(String name, String value) {
    try {
      int v = Integer.parseInt(value.trim());
      if (v < 0) throw new IllegalArgumentException(name + " must not be negative, got " + v);
      return v;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " must be an integer, got '" + value + "'");
    }
  }

  private static long integer(String name, String value) {
    try {
      return Long.parseLong(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " must be an integer, got '" + value + "'");
    }
  }

  /** Requests per second: a finite number > 0, or {@code inf} (vLLM's default: every request at once). */
  private static double rate(String name, String value) {
    String v = value.strip();
    if (v.equalsIgnoreCase("inf") || v.equalsIgnoreCase("infinity")) return Double.POSITIVE_INFINITY;
    double r;
    try {
      r = Double.parseDouble(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " must be a number of requests per second or 'inf', got '" + value + "'");
    }
    if (!(r > 0) || Double.isInfinite(r)) throw new IllegalArgumentException(name + " must be > 0 requests per second (or 'inf'), got " + v);
    return r;
  }

  private static double positiveSeconds(String name, String value) {
    try {
      double s = Double.parseDouble(value.strip());
      if (s > 0 && Double.isFinite(s)) return s;
    } catch (NumberFormatException e) {
      // the message below
    }
    throw new IllegalArgumentException(name + " must be a number of seconds > 0, got '" + value + "'");
  }

  private static URI httpUrl(String name, String value) {
    URI uri;
    try {
      uri = URI.create(value.strip());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(name + ": '" + value.strip() + "' is not a URL");
    }
    if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null) {
      throw new IllegalArgumentException(name + " needs http(s)://HOST:PORT[/PATH] URLs, got '" + value.strip() + "'");
    }
    return uri;
  }
}
