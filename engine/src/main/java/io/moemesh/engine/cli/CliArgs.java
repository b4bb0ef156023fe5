package io.moemesh.engine.cli;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * {@code --name value} and {@code --flag} options of one subcommand. Every option must be declared; an
 * unknown or repeated option, a missing value or a malformed number is a {@link UsageException} naming it.
 */
final class CliArgs {
  private final String command;
  private final Map<String, String> values = new HashMap<>();
  private final Set<String> flags = new HashSet<>();

  /** Parses {@code args} given the options that take a value and the flags that do not. */
  CliArgs(String command, List<String> args, Set<String> valueOptions, Set<String> flagOptions) {
    this.command = command;
    for (int i = 0; i < args.size(); i++) {
      String arg = args.get(i);
      String name = arg.startsWith("--") ? arg.substring(2) : null;
      String inline = null;
      if (name != null && name.contains("=")) {
        inline = name.substring(name.indexOf('=') + 1);
        name = name.substring(0, name.indexOf('='));
      }
      if (name == null || !(valueOptions.contains(name) || flagOptions.contains(name)))
        throw new UsageException(command + ": unknown option '" + arg + "'");
      if (values.containsKey(name) || flags.contains(name)) throw new UsageException(command + ": --" + name + " given twice");
      if (flagOptions.contains(name)) {
        if (inline != null) throw new UsageException(command + ": --" + name + " takes no value");
        flags.add(name);
      } else if (inline != null) {
        values.put(name, inline);
      } else {
        if (i + 1 >= args.size()) throw new UsageException(command + ": --" + name + " needs a value");
        values.put(name, args.get(++i));
      }
    }
  }

  Optional<String> string(String name) {
    return Optional.ofNullable(values.get(name));
  }

  String required(String name) {
    return string(name).orElseThrow(() -> new UsageException(command + ": --" + name + " is required"));
  }

  boolean flag(String name) {
    return flags.contains(name);
  }

  int integer(String name, int fallback, int min, int max) {
    String v = values.get(name);
    if (v == null) return fallback;
    try {
      int value = Integer.parseInt(v.trim());
      if (value < min || value > max) throw new UsageException(command + ": --" + name + " must be in [" + min + ", " + max + "], got " + value);
      return value;
    } catch (NumberFormatException e) {
      throw new UsageException(command + ": --" + name + " must be an integer, got '" + v + "'");
    }
  }

  Optional<Long> longValue(String name) {
    String v = values.get(name);
    if (v == null) return Optional.empty();
    try {
      return Optional.of(Long.parseLong(v.trim()));
    } catch (NumberFormatException e) {
      throw new UsageException(command + ": --" + name + " must be an integer, got '" + v + "'");
    }
  }

  Optional<Double> number(String name) {
    String v = values.get(name);
    if (v == null) return Optional.empty();
    try {
      return Optional.of(Double.parseDouble(v.trim()));
    } catch (NumberFormatException e) {
      throw new UsageException(command + ": --" + name + " must be a number, got '" + v + "'");
    }
  }

  /** At most one of {@code names} may be given; returns which, if any. */
  Optional<String> oneOf(String... names) {
    String found = null;
    for (String n : names) {
      if (!values.containsKey(n) && !flags.contains(n)) continue;
      if (found != null) throw new UsageException(command + ": give only one of --" + String.join(", --", names));
      found = n;
    }
    return Optional.ofNullable(found);
  }
}
