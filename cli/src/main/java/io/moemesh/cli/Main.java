package io.moemesh.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * The command line behind {@code bin/moemesh}'s {@code up} (its options; the script starts the processes),
 * {@code make-model}, {@code make-tokenizer} and {@code generate}.
 */
@Command(name = "moemesh", description = "Check up's options; make a checkpoint or a tokenizer; run one prompt.",
    subcommands = {UpCommand.class, MakeModelCommand.class, MakeTokenizerCommand.class, GenerateCommand.class, Main.DemoModelCommand.class,
        HelpCommand.class})
public final class Main implements Runnable {
  @Mixin HelpOption help;
  @Spec CommandSpec spec;

  /** Kept referenced: java.util.logging holds its loggers weakly, and a collected one forgets its level. */
  private static final java.util.logging.Logger DJL = java.util.logging.Logger.getLogger("ai.djl");

  public static void main(String[] args) {
    DJL.setLevel(java.util.logging.Level.WARNING); // DJL reports at INFO which native library it picked
    Cli.main(new Main(), args);
  }

  @Override
  public void run() {
    throw Cli.usageError(spec, "no command given");
  }

  /** {@code demo-model [NAME]}: makes (once) and prints the directory of a demo model; for scripts, so not listed. */
  @Command(name = "demo-model", hidden = true, description = "Print the directory of a demo model, making it first if needed.")
  static final class DemoModelCommand implements Callable<Integer> {
    @Mixin HelpOption help;

    @Parameters(arity = "0..1", paramLabel = "NAME", description = "demo, tiny, small or bench (default: ${DEFAULT-VALUE})")
    String name = DemoModels.DEFAULT;

    @Override
    public Integer call() throws Exception {
      Path dir = DemoModels.ensure(name);
      System.out.println(dir);
      return 0;
    }
  }
}
