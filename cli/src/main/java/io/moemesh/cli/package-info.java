/**
 * The offline command line behind {@code bin/moemesh} ({@link io.moemesh.cli.Main}, picocli): {@code up}'s options
 * (the script starts the processes), {@code make-model}, {@code make-tokenizer}, {@code generate}, and the demo models
 * ({@link io.moemesh.cli.DemoModels}). It needs the engine and the tokenizer, so it is its own module: the engine and
 * the services stay free of picocli, DJL and Jinjava. The benchmarks' commands reuse {@link io.moemesh.cli.Cli},
 * {@link io.moemesh.cli.HelpOption} and the demo models.
 */
package io.moemesh.cli;
