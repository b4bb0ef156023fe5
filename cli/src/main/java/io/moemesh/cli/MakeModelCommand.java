package io.moemesh.cli;

import io.moemesh.model.demo.DemoCheckpoint;
import io.moemesh.tokenizer.TokenizerFiles;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code make-model --config FILE|tiny|small|bench --out DIR [--seed N] [--format bf16|fp8] [--router-skew S]}.
 * {@code --router-skew S} adds S to a few hot experts' gate correction bias per MoE layer, so they receive
 * most tokens (see {@code RouterSkew}); 0, the default, writes the unskewed checkpoint.
 */
@Command(name = "make-model", sortOptions = false, sortSynopsis = false,
    description = "Write a seeded random checkpoint (config, safetensors, BPE tokenizer, chat template).")
final class MakeModelCommand implements Callable<Integer> {
  @Mixin HelpOption help;
  @Spec CommandSpec spec;

  @Option(names = "--config", required = true, paramLabel = "FILE|tiny|small|bench",
      description = "The model's config.json, or the name of a shipped config.")
  String config;

  @Option(names = "--out", required = true, paramLabel = "DIR", description = "Where the checkpoint goes.")
  Path out;

  @Option(names = "--seed", paramLabel = "N", description = "The weights' random seed (default: ${DEFAULT-VALUE}).")
  long seed = DemoModels.DEFAULT_SEED;

  @Option(names = "--format", paramLabel = "bf16|fp8", description = "The weights' format (default: bf16).")
  DemoCheckpoint.Format format = DemoCheckpoint.Format.BF16;

  @Option(names = "--router-skew", paramLabel = "S", description = "Adds S to the gate correction bias of 1/8 of the experts per"
      + " MoE layer, so they get most tokens (0.1-0.25: a real router's tilt, 1: nearly every token; default: ${DEFAULT-VALUE}).")
  double routerSkew = 0;

  @Override
  public Integer call() throws Exception {
    if (!(routerSkew >= 0) || Double.isInfinite(routerSkew))
      throw Cli.usageError(spec, "--router-skew must be a number ≥ 0, got " + routerSkew);
    Path configFile = DemoModels.config(config);
    long start = System.nanoTime();
    DemoCheckpoint.write(configFile, out, seed, format, (float) routerSkew, TokenizerFiles::write, DemoModels.progress("writing"));
    System.err.printf("wrote %s in %.1f s%n", out, (System.nanoTime() - start) / 1e9);
    return 0;
  }
}
