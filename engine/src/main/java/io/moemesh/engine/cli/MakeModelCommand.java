package io.moemesh.engine.cli;

import io.moemesh.model.demo.DemoCheckpoint;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * {@code make-model --config FILE|tiny|small|bench --out DIR [--seed N] [--format bf16|fp8] [--router-skew S]}.
 * {@code --router-skew S} adds S to a few hot experts' gate correction bias per MoE layer, so they receive
 * most tokens (see {@code RouterSkew}); 0, the default, writes the unskewed checkpoint.
 */
final class MakeModelCommand {
  static final String USAGE = "make-model --config FILE|tiny|small|bench --out DIR [--seed N] [--format bf16|fp8] [--router-skew S]";

  private MakeModelCommand() {}

  static void run(List<String> argv) throws Exception {
    var args = new CliArgs("make-model", argv, Set.of("config", "out", "seed", "format", "router-skew"), Set.of());
    Path config = DemoModels.config(args.required("config"));
    Path out = Path.of(args.required("out"));
    long seed = args.longValue("seed").orElse(DemoModels.DEFAULT_SEED);
    String format = args.string("format").orElse("bf16").toUpperCase(Locale.ROOT);
    if (!format.equals("BF16") && !format.equals("FP8")) throw new UsageException("make-model: --format must be bf16 or fp8, got '" + format + "'");
    double skew = args.number("router-skew").orElse(0.0);
    if (!(skew >= 0) || Double.isInfinite(skew)) throw new UsageException("make-model: --router-skew must be a number ≥ 0, got " + skew);
    long start = System.nanoTime();
    DemoCheckpoint.write(config, out, seed, DemoCheckpoint.Format.valueOf(format), (float) skew, DemoModels.progress("writing"));
    System.err.printf("wrote %s in %.1f s%n", out, (System.nanoTime() - start) / 1e9);
  }
}
