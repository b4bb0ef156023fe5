package io.moemesh.engine.cli;

import io.moemesh.model.tokenizer.TokenizerFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * {@code make-tokenizer --corpus FILE[,FILE...] --vocab-size V --out DIR [--bos-id N] [--eos-id N] [--model-max-length L]}:
 * a byte-level BPE tokenizer learned from the given UTF-8 texts with the project's own trainer, written as a demo
 * model's {@code tokenizer.json} and {@code tokenizer_config.json} (DeepSeek-V3 specials, chat template). Used to
 * give a model trained on that corpus its vocabulary (tools/train-demo).
 */
final class MakeTokenizerCommand {
  static final String USAGE =
      "make-tokenizer --corpus FILE[,FILE...] --vocab-size V --out DIR [--bos-id 0] [--eos-id 1] [--model-max-length L]";

  private MakeTokenizerCommand() {}

  static void run(List<String> argv) throws Exception {
    var args = new CliArgs("make-tokenizer", argv,
        Set.of("corpus", "vocab-size", "out", "bos-id", "eos-id", "model-max-length"), Set.of());
    List<String> texts = new ArrayList<>();
    for (String file : args.required("corpus").split(",")) {
      Path path = Path.of(file.trim());
      if (!Files.isRegularFile(path)) throw new UsageException("make-tokenizer: --corpus: no such file " + path);
      texts.add(Files.readString(path));
    }
    int vocabSize = intOption(args, "vocab-size", -1);
    int bosId = intOption(args, "bos-id", 0), eosId = intOption(args, "eos-id", 1);
    int maxLength = intOption(args, "model-max-length", 16384);
    Path out = Path.of(args.required("out"));
    long start = System.nanoTime();
    int realTokens;
    try {
      realTokens = TokenizerFiles.write(out, texts, vocabSize, bosId, eosId, maxLength);
    } catch (IllegalArgumentException e) {
      throw new UsageException("make-tokenizer: " + e.getMessage());
    }
    System.err.printf("wrote %s: %d ids, %d learned from the corpus, in %.1f s%n", out, vocabSize, realTokens,
        (System.nanoTime() - start) / 1e9);
  }

  private static int intOption(CliArgs args, String name, int fallback) {
    long v = fallback < 0 ? args.longValue(name).orElseThrow(() -> new UsageException("make-tokenizer: --" + name + " is required"))
        : args.longValue(name).orElse((long) fallback);
    if (v < 0 || v > Integer.MAX_VALUE) throw new UsageException("make-tokenizer: --" + name + " must be ≥ 0, got " + v);
    return (int) v;
  }
}
