package io.moemesh.bench;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * The {@code --name value} options and {@code --flag}s of a bench command. Every option is declared, so a typo is an
 * error rather than a benchmark run on the defaults, and {@code -h}/{@code --help} asks for the usage instead of a run.
 */
final class BenchOptions {
  private final Map<String, String> values;
  private final Set<String> flags;
  private final boolean help;

  private BenchOptions(Map<String, String> values, Set<String> flags, boolean help) {
    this.values = values;
    this.flags = flags;
    this.help = help;
  }

  /** Parses argv against the declared option names; {@code --name=value} works too. */
  static BenchOptions parse(String[] argv, Set<String> valueNames, Set<String> flagNames) {
    Map<String, String> values = new HashMap<>();
    Set<String> flags = new HashSet<>();
    boolean help = false;
    for (int i = 0; i < argv.length; i++) {
      String arg = argv[i];
      int eq = arg.indexOf('=');
      String name = eq > 0 ? arg.substring(0, eq) : arg;
      if (arg.equals("-h") || arg.equals("--help")) help = true;
      else if (flagNames.contains(arg)) flags.add(arg);
      else if (valueNames.contains(name)) {
        if (eq < 0 && i + 1 >= argv.length) throw new IllegalArgumentException(name + " needs a value");
        if (values.put(name, eq > 0 ? arg.substring(eq + 1) : argv[++i]) != null)
          throw new IllegalArgumentException(name + " is given twice");
      } else {
        var known = new TreeSet<>(valueNames);
        known.addAll(flagNames);
        throw new IllegalArgumentException("unknown option '" + arg + "' (options: " + String.join(", ", known) + ")");
      }
    }
    return new BenchOptions(values, flags, help);
  }

  boolean help() {
    return help;
  }

  String value(String name, String fallback) {
    return values.getOrDefault(name, fallback);
  }

  boolean flag(String name) {
    return flags.contains(name);
  }

  /**
   * Runs a bench command's main: its options parsed and read by {@code settings}, which throws
   * IllegalArgumentException with the reason for a bad value. {@code --help} prints the usage and exits 0; a bad
   * option prints the reason and the usage to stderr and exits 2; otherwise {@code run} gets the settings.
   */
  static <S> void main(String command, String usage, String[] argv, Set<String> valueNames, Set<String> flagNames,
      Function<BenchOptions, S> settings, Run<S> run) throws Exception {
    S parsed;
    try {
      BenchOptions options = parse(argv, valueNames, flagNames);
      if (options.help()) {
        System.out.println(usage);
        return;
      }
      parsed = settings.apply(options);
    } catch (IllegalArgumentException e) {
      System.err.println("bench " + command + ": " + e.getMessage());
      System.err.println(usage);
      System.exit(2);
      return;
    }
    run.run(parsed);
  }

  @FunctionalInterface
  interface Run<S> {
    void run(S settings) throws Exception;
  }

  static int positive(String name, String value) {
    int v = integer(name, value);
    if (v < 1) throw new IllegalArgumentException(name + " must be at least 1, got " + v);
    return v;
  }

  static int nonNegative(String name, String value) {
    int v = integer(name, value);
    if (v < 0) throw new IllegalArgumentException(name + " must be at least 0, got " + v);
    return v;
  }

  private static int integer(String name, String value) {
    try {
      return Integer.parseInt(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " must be an integer, got '" + value + "'");
    }
  }
}
