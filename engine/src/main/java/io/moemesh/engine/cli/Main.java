package io.moemesh.engine.cli;

import java.util.List;

/** The offline command line behind {@code bin/moemesh}: {@code make-model}, {@code make-tokenizer} and {@code generate}. */
public final class Main {
  private Main() {}

  /** Kept referenced: java.util.logging holds its loggers weakly, and a collected one forgets its level. */
  private static final java.util.logging.Logger DJL = java.util.logging.Logger.getLogger("ai.djl");

  public static void main(String[] argv) {
    DJL.setLevel(java.util.logging.Level.WARNING); // DJL reports at INFO which native library it picked
    List<String> args = List.of(argv);
    String command = args.isEmpty() ? "help" : args.getFirst();
    List<String> rest = args.isEmpty() ? List.of() : args.subList(1, args.size());
    try {
      switch (command) {
        case "make-model" -> MakeModelCommand.run(rest);
        case "make-tokenizer" -> MakeTokenizerCommand.run(rest);
        case "generate" -> GenerateCommand.run(rest);
        case "demo-model" -> System.out.println(DemoModels.ensure(rest.isEmpty() ? DemoModels.DEFAULT : rest.getFirst()));
        case "help", "--help", "-h" -> System.out.println(usage());
        default -> throw new UsageException("unknown command '" + command + "'");
      }
    } catch (UsageException e) {
      System.err.println("moemesh: " + e.getMessage());
      System.err.println(usage());
      System.exit(2);
    } catch (Exception e) {
      System.err.println("moemesh " + command + ": " + e.getMessage());
      System.exit(1);
    }
  }

  static String usage() {
    return "usage: moemesh " + MakeModelCommand.USAGE + "\n       moemesh " + MakeTokenizerCommand.USAGE
        + "\n       moemesh " + GenerateCommand.USAGE;
  }
}
