package io.moemesh.cli;

import io.moemesh.tokenizer.TokenizerFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code make-tokenizer --corpus FILE[,FILE...] --vocab-size V --out DIR [--bos-id N] [--eos-id N] [--model-max-length L]}:
 * a byte-level BPE tokenizer learned from the given UTF-8 texts with the project's own trainer, written as a demo
 * model's {@code tokenizer.json} and {@code tokenizer_config.json} (DeepSeek-V3 specials, chat template). Used to
 * give a model trained on that corpus its vocabulary (tools/train-demo).
 */
@Command(name = "make-tokenizer", sortOptions = false, sortSynopsis = false, description = {
    "Learn a byte-level BPE tokenizer from the given texts (tokenizer.json, tokenizer_config.json with DeepSeek-V3's"
        + " special tokens and the chat template), as a model trained on them needs."})
final class MakeTokenizerCommand implements Callable<Integer> {
  @Mixin HelpOption help;
  @Spec CommandSpec spec;

  @Option(names = "--corpus", required = true, split = "\\s*,\\s*", splitSynopsisLabel = ",", paramLabel = "FILE",
      description = "The UTF-8 texts to learn from.")
  List<Path> corpus;

  @Option(names = "--vocab-size", required = true, paramLabel = "V", description = "Ids in the vocabulary, special tokens included.")
  int vocabSize;

  @Option(names = "--out", required = true, paramLabel = "DIR", description = "Where the tokenizer files go.")
  Path out;

  @Option(names = "--bos-id", paramLabel = "N", description = "The BOS token's id (default: ${DEFAULT-VALUE}).")
  int bosId = 0;

  @Option(names = "--eos-id", paramLabel = "N", description = "The EOS token's id (default: ${DEFAULT-VALUE}).")
  int eosId = 1;

  @Option(names = "--model-max-length", paramLabel = "L", description = "The context the tokenizer config states (default: ${DEFAULT-VALUE}).")
  int modelMaxLength = 16384;

  @Override
  public Integer call() throws Exception {
    nonNegative("--vocab-size", vocabSize);
    nonNegative("--bos-id", bosId);
    nonNegative("--eos-id", eosId);
    nonNegative("--model-max-length", modelMaxLength);
    List<String> texts = new ArrayList<>();
    for (Path path : corpus) {
      if (!Files.isRegularFile(path)) throw Cli.usageError(spec, "--corpus: no such file " + path);
      texts.add(Files.readString(path));
    }
    long start = System.nanoTime();
    int realTokens;
    try {
      realTokens = TokenizerFiles.write(out, texts, vocabSize, bosId, eosId, modelMaxLength);
    } catch (IllegalArgumentException e) {
      throw Cli.usageError(spec, e.getMessage());
    }
    System.err.printf("wrote %s: %d ids, %d learned from the corpus, in %.1f s%n", out, vocabSize, realTokens,
        (System.nanoTime() - start) / 1e9);
    return 0;
  }

  private void nonNegative(String name, int value) {
    if (value < 0) throw Cli.usageError(spec, name + " must be ≥ 0, got " + value);
  }
}
