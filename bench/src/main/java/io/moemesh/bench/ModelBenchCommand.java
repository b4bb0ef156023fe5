package io.moemesh.bench;

import io.moemesh.cli.Cli;
import io.moemesh.cli.HelpOption;
import io.moemesh.model.Precision;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code bench model}'s command line: {@link ModelBench.Settings}. */
@Command(name = "model", sortOptions = false, sortSynopsis = false, description = {
    "One request alone, at 1 and 2 threads: prefill of a P-token prompt, then N decode steps, each against the memory"
        + " roofline (triad bandwidth measured in the same run)."})
final class ModelBenchCommand implements Callable<Integer> {
  @Mixin HelpOption help;
  @Spec CommandSpec spec;

  @Option(names = "--model", paramLabel = "DIR", description = "The checkpoint (default: the 'bench' demo model, ~1.9 G"
      + " parameters, made and cached on first use).")
  Path model;

  @Option(names = "--precision", paramLabel = "exact|bf16|int8", description = "The weights' precision (default: int8).")
  Precision precision = Precision.INT8;

  @Option(names = "--prompt-len", paramLabel = "P", description = "Prompt tokens (default: ${DEFAULT-VALUE}).")
  int promptLen = 512;

  @Option(names = "--decode-tokens", paramLabel = "N", description = "Decode steps (default: ${DEFAULT-VALUE}).")
  int decodeTokens = 64;

  @Option(names = "--profile", description = "Where a decode step's time goes, per kernel op: each decode once more with every"
      + " kernel call timed.")
  boolean profile;

  @Option(names = "--contend", description = "The 2-thread decode once more beside a CPU-bound process, against the same decode"
      + " alone (mean step times, which include any stall).")
  boolean contend;

  @Option(names = "--json", paramLabel = "FILE", description = "Also write the figures to FILE.")
  Path json;

  ModelBench.Settings settings() {
    return new ModelBench.Settings(model, precision, Cli.atLeast(spec, "--prompt-len", promptLen, 1),
        Cli.atLeast(spec, "--decode-tokens", decodeTokens, 1), json, profile, contend);
  }

  @Override
  public Integer call() throws Exception {
    ModelBench.benchmark(settings());
    return 0;
  }
}
