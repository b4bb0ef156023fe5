package io.moemesh.cli;

import picocli.CommandLine.Option;

/** {@code -h}/{@code --help} on every command: its generated usage (a picocli mixin). */
public final class HelpOption {
  @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
  boolean help;
}
