package io.moemesh.bench;

import io.moemesh.cli.Cli;
import io.moemesh.cli.HelpOption;
import java.net.URI;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code bench profile}'s command line: {@link ProfileBench.Options}. */
@Command(name = "profile", sortOptions = false, sortSynopsis = false, description = {
    "The planner's profile of a running mesh with one prefill and one decode replica (bin/moemesh up --decode-replicas 1):"
        + " closed-loop steps at concurrency 1, 2, 4, ... up to C through URL's /v1/completions, N requests per client and"
        + " step after one warm-up each, and W warm-up requests before each sweep. Prefill: I-token prompts and 1 output"
        + " token, the prompt tokens/s at the highest step whose p90 TTFT meets the target; decode: I prompt and O output"
        + " tokens, the requests running in decode at the highest step whose p90 ITL meets it. Writes the JSON to FILE"
        + " (default: stdout), the steps to stderr."})
final class ProfileBenchCommand implements Callable<Integer> {
  @Mixin HelpOption help;
  @Spec CommandSpec spec;

  @Option(names = "--url", required = true, paramLabel = "URL", description = "The mesh's gateway (http://HOST:PORT).")
  String url;

  @Option(names = "--ttft-target", required = true, paramLabel = "MS", description = "The p90 TTFT target in milliseconds.")
  double ttftTarget;

  @Option(names = "--itl-target", required = true, paramLabel = "MS", description = "The p90 ITL target in milliseconds.")
  double itlTarget;

  @Option(names = "--input-len", paramLabel = "I", description = "Prompt tokens (default: ${DEFAULT-VALUE}).")
  int inputLen = 512;

  @Option(names = "--output-len", paramLabel = "O", description = "Output tokens of the decode sweep, at least 2 (default: ${DEFAULT-VALUE}).")
  int outputLen = 128;

  @Option(names = "--max-concurrency", paramLabel = "C", description = "The highest step (default: ${DEFAULT-VALUE}).")
  int maxConcurrency = 64;

  @Option(names = "--requests-per-client", paramLabel = "N", description = "Requests per client and step (default: ${DEFAULT-VALUE}).")
  int requestsPerClient = 4;

  @Option(names = "--warmup", paramLabel = "W", description = "Warm-up requests before each sweep (default: ${DEFAULT-VALUE}).")
  int warmup = 8;

  @Option(names = "--out", paramLabel = "FILE", description = "Where the profile JSON goes (default: stdout).")
  Path out;

  @Option(names = "--model-name", paramLabel = "M", description = "The model to ask for (default: the first /v1/models lists).")
  String modelName;

  @Option(names = "--tokenizer", paramLabel = "DIR", description = "The model directory whose tokenizer gives the prompt ids"
      + " (default: the demo model M in $MOEMESH_HOME/models).")
  Path tokenizer;

  @Option(names = "--seed", paramLabel = "S", description = "The prompts' seed (default: ${DEFAULT-VALUE}).")
  long seed = 0;

  ProfileBench.Options options() {
    positive("--ttft-target", ttftTarget);
    positive("--itl-target", itlTarget);
    Cli.atLeast(spec, "--input-len", inputLen, 1);
    if (outputLen < 2) throw Cli.usageError(spec, "--output-len must be at least 2: ITL needs two tokens, got " + outputLen);
    URI endpoint;
    try {
      endpoint = ServeClient.completionsEndpoint(url.strip());
    } catch (IllegalArgumentException e) {
      throw Cli.usageError(spec, "--url: '" + url + "' is not a URL");
    }
    return new ProfileBench.Options(endpoint, ttftTarget, itlTarget, inputLen, outputLen,
        Cli.atLeast(spec, "--max-concurrency", maxConcurrency, 1), Cli.atLeast(spec, "--requests-per-client", requestsPerClient, 1),
        Cli.atLeast(spec, "--warmup", warmup, 1), out, modelName, tokenizer, seed);
  }

  @Override
  public Integer call() throws Exception {
    ProfileBench.run(options());
    return 0;
  }

  private void positive(String name, double value) {
    if (!(value > 0) || Double.isInfinite(value)) throw Cli.usageError(spec, name + " must be > 0, got " + value);
  }
}
