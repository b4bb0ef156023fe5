package io.moemesh.bench;

import io.moemesh.cli.Cli;
import java.net.URI;
import java.nio.file.Path;
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
    URI plannerMetrics, double windowSeconds) {

  static final int UNLIMITED = Integer.MAX_VALUE;

  /** The options {@code bench serve ARGS} runs with; a usage error is a picocli {@code ParameterException} saying what is wrong. */
  static ServeOptions parse(String... args) {
    return Cli.parse(new ServeBenchCommand(), args).options();
  }

  /** Where the PNG chart goes: {@code --charts DIR}, else beside the JSON; null for neither. */
  Path chartFile() {
    String base = json == null ? "serve" : json.getFileName().toString().replaceFirst("\\.json$", "");
    if (charts != null) return charts.resolve(base + ".png");
    return json == null ? null : json.resolveSibling(base + ".png");
  }
}
