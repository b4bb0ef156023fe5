package io.moemesh.bench;

import io.moemesh.cli.Cli;
import io.moemesh.cli.HelpOption;
import io.moemesh.engine.DeepseekRunner;
import io.moemesh.model.Precision;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code bench throughput}'s command line: {@link ThroughputBench.Settings}. */
@Command(name = "throughput", sortOptions = false, sortSynopsis = false, description = {
    "B requests of I prompt tokens and O output tokens through the engine at once (continuous batching), for each batch"
        + " size B: prefill and decode tokens/s, time per output token, and decode against the memory roofline of its steps"
        + " (triad bandwidth measured right before and after)."})
final class ThroughputBenchCommand implements Callable<Integer> {
  @Mixin HelpOption help;
  @Spec CommandSpec spec;

  @Option(names = "--model", paramLabel = "DIR", description = "The checkpoint (default: the 'bench' demo model).")
  Path model;

  @Option(names = "--precision", paramLabel = "exact|bf16|int8", description = "The weights' precision (default: int8).")
  Precision precision = Precision.INT8;

  @Option(names = "--batch", split = "\\s*,\\s*", splitSynopsisLabel = ",", defaultValue = "1,8,32,64", paramLabel = "B",
      description = "Batch sizes (default: ${DEFAULT-VALUE}).")
  List<Integer> batch;

  @Option(names = "--input-len", paramLabel = "I", description = "Prompt tokens per request (default: ${DEFAULT-VALUE}).")
  int inputLen = 512;

  @Option(names = "--output-len", paramLabel = "O", description = "Output tokens per request, at least 2 (default: ${DEFAULT-VALUE}).")
  int outputLen = 128;

  @Option(names = "--threads", paramLabel = "T", description = "Kernel threads (default: every core, ${DEFAULT-VALUE}).")
  int threads = Runtime.getRuntime().availableProcessors();

  @Option(names = "--micro-batch-threshold", paramLabel = "M", description = "Steps of at least M tokens run as two overlapped"
      + " micro-batches (default: the engine's, ${DEFAULT-VALUE}; 0 = never).")
  int microBatchThreshold = DeepseekRunner.DEFAULT_MICRO_BATCH_THRESHOLD;

  @Option(names = "--speculative-tokens", paramLabel = "K", description = "K MTP drafts per request and step (speculative"
      + " decoding); decode figures count the tokens delivered, and the drafts' acceptance is reported (default: ${DEFAULT-VALUE} = off).")
  int speculativeTokens = 0;

  @Option(names = "--profile", description = "Where a full-batch decode step's time goes, and a step computing prompt tokens, per"
      + " kernel op, each against its speed of light (its bytes at triad bandwidth or its multiply-adds at the measured INT8"
      + " and BF16 peaks, whichever is longer).")
  boolean profile;

  @Option(names = "--json", paramLabel = "FILE", description = "Also write the figures to FILE.")
  Path json;

  ThroughputBench.Settings settings() {
    int[] batches = batch.stream().mapToInt(b -> Cli.atLeast(spec, "--batch", b, 1)).toArray();
    Cli.atLeast(spec, "--input-len", inputLen, 1);
    if (outputLen < 2) throw Cli.usageError(spec, "--output-len must be at least 2 (decode needs a second token), got " + outputLen);
    return new ThroughputBench.Settings(model, precision, batches, inputLen, outputLen, Cli.atLeast(spec, "--threads", threads, 1),
        json, profile, Cli.atLeast(spec, "--micro-batch-threshold", microBatchThreshold, 0),
        Cli.atLeast(spec, "--speculative-tokens", speculativeTokens, 0));
  }

  @Override
  public Integer call() throws Exception {
    ThroughputBench.benchmark(settings());
    return 0;
  }
}
