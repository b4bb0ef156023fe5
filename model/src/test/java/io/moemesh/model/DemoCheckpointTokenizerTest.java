package io.moemesh.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.model.demo.DemoCheckpoint;
import io.moemesh.model.demo.DemoCheckpoint.Format;
import io.moemesh.model.demo.TokenizerWriter;
import io.moemesh.tokenizer.TokenizerFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo checkpoint's tokenizer seam: the model writes tokenizer files only through a {@link TokenizerWriter} (the
 * tokenizer module's {@code TokenizerFiles::write}), and the weights depend on it only through how many ids are real.
 */
class DemoCheckpointTokenizerTest {
  static final long SEED = 7;

  @TempDir Path dir;

  @Test
  void withoutATokenizerTheTinyCheckpointHasTheSameWeightsAndNoTokenizerFiles() throws IOException {
    Path with = write("with", TokenizerFiles::write), without = write("without", TokenizerWriter.NONE);
    assertThat(with.resolve("tokenizer.json")).isRegularFile();
    assertThat(with.resolve("tokenizer_config.json")).isRegularFile();
    assertThat(without.resolve("tokenizer.json")).doesNotExist();
    assertThat(without.resolve("tokenizer_config.json")).doesNotExist();
    // the tokenizer's real tokens fill tiny's 1024 ids, so NONE (every id real) shapes the head the same way:
    // the engine's and services' tests make tiny checkpoints without the tokenizer and get the weights they had
    assertThat(Files.readAllBytes(without.resolve("model.safetensors"))).isEqualTo(Files.readAllBytes(with.resolve("model.safetensors")));
    assertThat(Files.readString(without.resolve("config.json"))).isEqualTo(Files.readString(with.resolve("config.json")));
  }

  @Test
  void theRealTokenCountShapesTheHead() throws IOException {
    Path all = write("all", TokenizerWriter.NONE);
    Path half = write("half", (d, vocabSize, bos, eos, maxLength) -> vocabSize / 2);
    assertThat(Files.readAllBytes(half.resolve("model.safetensors"))).isNotEqualTo(Files.readAllBytes(all.resolve("model.safetensors")));
  }

  @Test
  void aWriterReportingNoRealTokensOrMoreThanTheVocabularyIsRefused() {
    assertThatThrownBy(() -> write("none", (d, vocabSize, bos, eos, maxLength) -> 0))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("reports 0 real tokens of 1024");
    assertThatThrownBy(() -> write("more", (d, vocabSize, bos, eos, maxLength) -> vocabSize + 1))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("reports 1025 real tokens of 1024");
  }

  private Path write(String name, TokenizerWriter tokenizer) throws IOException {
    Path out = dir.resolve(name);
    DemoCheckpoint.write(TestCheckpoints.config("tiny"), out, SEED, Format.BF16, 0, tokenizer, null);
    return out;
  }
}
