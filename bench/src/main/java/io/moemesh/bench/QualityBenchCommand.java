package io.moemesh.bench;

import io.moemesh.cli.Cli;
import io.moemesh.cli.HelpOption;
import io.moemesh.model.Precision;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code bench quality}'s command line: {@link QualityBench.Settings}. */
@Command(name = "quality", sortOptions = false, sortSynopsis = false, description = {
    "Held-out perplexity per precision, top-1 agreement of each with exact, the MTP head's greedy acceptance of its first"
        + " draft and, when the model has heldout-chat.jsonl (the demo), how often its chat answers follow the request and"
        + " state the right fact. Documents (blank-line separated) open with BOS, as the demo model was trained."})
final class QualityBenchCommand implements Callable<Integer> {
  @Mixin HelpOption help;
  @Spec CommandSpec spec;

  @Option(names = "--model", paramLabel = "DIR", description = "The checkpoint (default: the trained demo model).")
  Path model;

  @Option(names = "--text", paramLabel = "FILE", description = "The held-out text (default: the model's heldout.txt).")
  Path text;

  @Option(names = "--precision", split = "\\s*,\\s*", splitSynopsisLabel = ",", defaultValue = "exact,bf16,int8", paramLabel = "P",
      description = "The precisions to measure (default: ${DEFAULT-VALUE}).")
  List<Precision> precisions;

  @Option(names = "--window", paramLabel = "W", description = "Tokens per window, at least 3 (default: ${DEFAULT-VALUE}).")
  int window = 256;

  @Option(names = "--max-tokens", paramLabel = "N", description = "Scored tokens at most (default: ${DEFAULT-VALUE}).")
  int maxTokens = 16384;

  @Option(names = "--json", paramLabel = "FILE", description = "Also write the figures to FILE.")
  Path json;

  QualityBench.Settings settings() {
    if (window < 3) throw Cli.usageError(spec, "--window must be at least 3 tokens, got " + window);
    return new QualityBench.Settings(model, text, precisions.stream().distinct().toList(), window,
        Cli.atLeast(spec, "--max-tokens", maxTokens, 1), json);
  }

  @Override
  public Integer call() throws Exception {
    QualityBench.benchmark(settings());
    return 0;
  }
}
