package io.moemesh.cli;

import io.moemesh.kernels.KernelException;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/**
 * How every command of {@code bin/moemesh} that runs in Java is parsed and run (picocli): {@code -h}/{@code --help}
 * prints the generated usage and exits 0; a usage error (an unknown option, a missing or malformed value, a value out
 * of range, a {@link UsageException}) prints {@code moemesh <command>: <what is wrong>} and the usage to stderr and
 * exits 2; a failure of the run itself prints {@code moemesh <command>: <message>} and exits 1.
 */
public final class Cli {
  /** Columns of the generated usage: the README's command lines are about as wide. */
  static final int USAGE_WIDTH = 100;

  private Cli() {}

  /** The command line of {@code command} (a picocli {@code @Command}) with the rules above. */
  public static CommandLine commandLine(Object command) {
    return new CommandLine(command)
        .setCaseInsensitiveEnumValuesAllowed(true) // --precision int8 as well as INT8
        .setUsageHelpWidth(USAGE_WIDTH)
        .setParameterExceptionHandler(Cli::usageError)
        .setExecutionExceptionHandler((e, commandLine, parsed) -> {
          if (e instanceof UsageException) return usageError(new ParameterException(commandLine, e.getMessage(), e), null);
          commandLine.getErr().println(name(commandLine) + ": " + message(e));
          if (!expected(e)) e.printStackTrace(commandLine.getErr()); // a bug: where it is matters
          return 1;
        });
  }

  /** Runs {@code command} with {@code args}; exits the JVM with the exit code unless it is 0 (so callers in tests go on). */
  public static void main(Object command, String... args) {
    int code = commandLine(command).execute(args);
    if (code != 0) System.exit(code);
  }

  /** Parses {@code args} into {@code command}'s fields without running it: a usage error is a {@link ParameterException}. */
  public static <T> T parse(T command, String... args) {
    commandLine(command).parseArgs(args);
    return command;
  }

  /** A usage error found after parsing (a value out of range, options that exclude each other), as picocli reports its own. */
  public static ParameterException usageError(CommandSpec spec, String message) {
    return new ParameterException(spec.commandLine(), message);
  }

  /** {@code value}, or a usage error {@code "<option> must be at least <min>, got <value>"}. */
  public static int atLeast(CommandSpec spec, String option, int value, int min) {
    if (value < min) throw usageError(spec, option + " must be at least " + min + ", got " + value);
    return value;
  }

  private static int usageError(ParameterException e, String[] args) {
    CommandLine commandLine = e.getCommandLine();
    PrintWriter err = commandLine.getErr();
    err.println(name(commandLine) + ": " + e.getMessage());
    CommandLine.UnmatchedArgumentException.printSuggestions(e, err);
    commandLine.usage(err);
    return commandLine.getCommandSpec().exitCodeOnInvalidInput();
  }

  private static String name(CommandLine commandLine) {
    return commandLine.getCommandSpec().qualifiedName(" ");
  }

  private static String message(Exception e) {
    return e.getMessage() != null ? e.getMessage() : e.toString();
  }

  /** Failures the commands report in one line: I/O, a bad file or state, the native kernels. */
  private static boolean expected(Exception e) {
    return e instanceof IOException || e instanceof UncheckedIOException || e instanceof IllegalStateException
        || e instanceof IllegalArgumentException || e instanceof KernelException || e instanceof InterruptedException;
  }
}
