package io.moemesh.model.demo;

import java.io.IOException;
import java.nio.file.Path;

/**
 * Writes a demo checkpoint's tokenizer files. The model runs on token ids and does not depend on the tokenizer
 * module: {@link DemoCheckpoint} needs only how many ids are real tokens (its head damps the rest), and callers that
 * want the files pass {@code io.moemesh.tokenizer.TokenizerFiles::write}, whose signature this is.
 */
@FunctionalInterface
public interface TokenizerWriter {
  /** No tokenizer files: every id of the vocabulary counts as a real token. */
  TokenizerWriter NONE = (dir, vocabSize, bosId, eosId, modelMaxLength) -> vocabSize;

  /**
   * Writes the tokenizer for a model with these ids into {@code dir}.
   *
   * @return the first placeholder id: ids below it are tokens the tokenizer produces, the rest never appear in text
   */
  int write(Path dir, int vocabSize, int bosId, int eosId, int modelMaxLength) throws IOException;
}
