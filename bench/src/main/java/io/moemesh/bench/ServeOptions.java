package io.moemesh.bench;

import java.net.URI;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * {@code bench serve}'s options.
 *
 * @param endpoint the completions endpoint ({@code --url} may name the server, {@code …/v1} or the endpoint)
 * @param modelName the {@code model} to send; null: the first that {@code GET /v1/models} lists
 * @param tokenizer the model directory whose tokenizer gives the prompt ids; null: the demo model of that name
 * @param prefixLen ids every prompt starts with, before its {@code inputLen} random ones (vLLM's {@code --random-prefix-len}):
 *     a prefix-caching workload; 0 = none
 * @param warmup requests sent (at the same concurrency) before the measured ones, and not counted
 * @param specMetrics engine replicas whose {@code /q/metrics} give the measured requests' draft acceptance
 *     (speculative decoding); empty: not reported
 */
record ServeOptions(URI endpoint, int concurrency, int numPrompts, int inputLen, int prefixLen, int outputLen, Path json,
    String modelName, Path tokenizer, long seed, int warmup, List<URI> specMetrics, boolean help) {

  static final String USAGE = """
      usage: bin/moemesh bench serve --url URL [--concurrency C] [--num-prompts N] [--input-len I] [--output-len O]
                                     [--prefix-len P] [--json FILE] [--model-name M] [--tokenizer DIR] [--seed S] [--warmup W]
                                     [--spec-metrics URL[,URL...]]
        N random prompts of exactly I token ids, streamed through URL's /v1/completions with max_tokens = O and
        ignore_eos, C at once; reports TTFT, TPOT, ITL and end-to-end latency (mean, p50, p90, p99) and the
        request and token throughputs. --prefix-len P: every prompt (warm-up ones too) starts with the same P ids,
        then its I random ones (a prefix-caching workload). --spec-metrics: the decode replicas (e.g.
        http://localhost:9300), whose vllm:spec_decode_* counters, read right before and after the measured requests,
        give their draft acceptance (speculative decoding). Defaults: C = 1, N = 64, I = 1024, O = 128, P = 0,
        S = 0, W = C; M = what /v1/models lists; DIR = $MOEMESH_HOME/models/M (the demo models' cache).""";

  static ServeOptions parse(String... args) {
    String url = null, model = null;
    Path json = null, tokenizer = null;
    int concurrency = 1, numPrompts = 64, inputLen = 1024, prefixLen = 0, outputLen = 128, warmup = -1;
    long seed = 0;
    List<URI> specMetrics = List.of();
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
      if (value == null) {
        if (i + 1 >= args.length) throw new IllegalArgumentException(name + " needs a value");
        value = args[++i];
      }
      switch (name) {
        case "--url" -> url = value;
        case "--concurrency" -> concurrency = positive(name, value);
        case "--num-prompts" -> numPrompts = positive(name, value);
        case "--input-len" -> inputLen = positive(name, value);
        case "--output-len" -> outputLen = positive(name, value);
        case "--prefix-len" -> prefixLen = nonNegative(name, value);
        case "--json" -> json = Path.of(value);
        case "--model-name" -> model = value;
        case "--tokenizer" -> tokenizer = Path.of(value);
        case "--seed" -> seed = Long.parseLong(value);
        case "--warmup" -> warmup = nonNegative(name, value);
        case "--spec-metrics" -> specMetrics = Arrays.stream(value.split(",")).map(String::strip).map(URI::create).toList();
        default -> throw new IllegalArgumentException("unknown option '" + name + "'");
      }
    }
    if (help) return new ServeOptions(null, concurrency, numPrompts, inputLen, prefixLen, outputLen, json, model, tokenizer, seed, 0, specMetrics, true);
    if (url == null) throw new IllegalArgumentException("--url is required (e.g. --url http://localhost:8000)");
    return new ServeOptions(ServeClient.completionsEndpoint(url), concurrency, numPrompts, inputLen, prefixLen, outputLen, json, model,
        tokenizer, seed, warmup < 0 ? concurrency : warmup, specMetrics, false);
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
}
