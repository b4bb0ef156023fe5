package io.moemesh.bench;

import io.moemesh.cli.Cli;
import io.moemesh.cli.HelpOption;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code bin/moemesh bench TARGET [OPTIONS]}: the benchmarks, one subcommand each. */
@Command(name = "moemesh bench", description = "Measure the kernels, a model, the engine's batching, a running server.",
    subcommands = {KernelBenchCommand.class, ModelBenchCommand.class, ThroughputBenchCommand.class, ServeBenchCommand.class,
        ProfileBenchCommand.class, QualityBenchCommand.class, HelpCommand.class})
public final class BenchCommand implements Runnable {
  @Mixin HelpOption help;
  @Spec CommandSpec spec;

  public static void main(String[] args) {
    Cli.main(new BenchCommand(), args);
  }

  @Override
  public void run() {
    throw Cli.usageError(spec, "bench needs a target: kernels, model, throughput, serve, profile or quality");
  }
}
