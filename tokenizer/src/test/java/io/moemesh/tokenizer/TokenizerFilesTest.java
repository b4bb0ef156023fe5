package io.moemesh.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class TokenizerFilesTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  @Nested
  class VocabularySize {
    @ParameterizedTest
    @ValueSource(ints = {1024, 32768, 129280})
    void isExactlyTheModelsVocabSize(int vocabSize) throws IOException {
      TokenizerFiles.write(dir, vocabSize, 0, 1);
      try (Tokenizer t = Tokenizer.load(dir)) {
        assertThat(t.vocabSize()).isEqualTo(vocabSize);
        List<Integer> missing = new ArrayList<>();
        for (int id = 0; id < vocabSize; id++) if (t.idToToken(id).isEmpty()) missing.add(id);
        assertThat(missing).isEmpty();
        assertThat(t.decode(t.encode(TokenizerTest.MIXED), false)).isEqualTo(TokenizerTest.MIXED);
      }
    }

    @Test
    void smallVocabularyIsAllBytesAndMerges() throws IOException {
      TokenizerFiles.write(dir, 1024, 0, 1);
      JsonNode model = JSON.readTree(dir.resolve("tokenizer.json").toFile()).get("model");
      assertThat(model.get("vocab").size()).isEqualTo(1024);
      assertThat(model.get("merges").size()).isEqualTo(1024 - 19 - 256);
      assertThat(model.get("vocab").has("<｜place▁holder▁no▁0｜>")).isFalse();
    }

    @Test
    void largeVocabularyEndsInPlaceholders() throws IOException {
      TokenizerFiles.write(dir, 129280, 0, 1);
      JsonNode model = JSON.readTree(dir.resolve("tokenizer.json").toFile()).get("model");
      int learned = 19 + 256 + model.get("merges").size();
      assertThat(model.get("vocab").get("<｜place▁holder▁no▁0｜>").asInt()).isEqualTo(learned);
      assertThat(model.get("vocab").get(TokenizerFiles.placeholder(129280 - learned - 1)).asInt()).isEqualTo(129279);
    }

    @Test
    void belowTheMinimumIsAnError() {
      assertThatThrownBy(() -> TokenizerFiles.write(dir, 200, 0, 1))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("275");
    }
  }

  @Nested
  class Layout {
    @Test
    void specialTokensComeFirstThenTheBytes() throws IOException {
      TokenizerFiles.write(dir, 1024, 0, 1);
      try (Tokenizer t = Tokenizer.load(dir)) {
        for (int id = 0; id < TokenizerFiles.SPECIAL_TOKENS.size(); id++) {
          assertThat(t.idToToken(id)).contains(TokenizerFiles.SPECIAL_TOKENS.get(id));
        }
        for (int b = 0; b < 256; b++) {
          assertThat(t.idToToken(19 + b)).contains(String.valueOf(ByteLevel.charOf(b)));
        }
      }
    }

    @Test
    void bosAndEosGoWhereTheModelConfigSays() throws IOException {
      TokenizerFiles.write(dir, 1024, 5, 2);
      try (Tokenizer t = Tokenizer.load(dir)) {
        assertThat(t.bosId()).isEqualTo(5);
        assertThat(t.eosId()).isEqualTo(2);
        assertThat(t.idToToken(0)).contains(TokenizerFiles.PAD);
      }
      assertThatThrownBy(() -> TokenizerFiles.write(dir, 1024, 1, 1)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> TokenizerFiles.write(dir, 1024, 0, 19)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void configLooksLikeDeepSeekV3s() throws IOException {
      TokenizerFiles.write(dir, 1024, 0, 1, 8192);
      JsonNode config = JSON.readTree(dir.resolve("tokenizer_config.json").toFile());
      assertThat(config.get("tokenizer_class").asText()).isEqualTo("LlamaTokenizerFast");
      assertThat(config.get("add_bos_token").asBoolean()).isTrue();
      assertThat(config.get("add_eos_token").asBoolean()).isFalse();
      assertThat(config.get("bos_token").get("content").asText()).isEqualTo(TokenizerFiles.BOS);
      assertThat(config.get("eos_token").get("content").asText()).isEqualTo(TokenizerFiles.EOS);
      assertThat(config.get("pad_token").get("content").asText()).isEqualTo(TokenizerFiles.PAD);
      assertThat(config.get("model_max_length").asInt()).isEqualTo(8192);
      assertThat(config.get("chat_template").asText()).isEqualTo(TokenizerFiles.chatTemplate());
      JsonNode tokenizer = JSON.readTree(dir.resolve("tokenizer.json").toFile());
      assertThat(tokenizer.get("normalizer").isNull()).isTrue();
      assertThat(tokenizer.get("decoder").get("type").asText()).isEqualTo("ByteLevel");
      assertThat(tokenizer.get("pre_tokenizer").get("pretokenizers").get(3).get("use_regex").asBoolean()).isFalse();
    }
  }

  @Nested
  class OwnCorpus {
    private static final List<String> STORIES = List.of(
        "The little fox ran to the river. The little fox saw a frog. \"Hello, frog!\" said the fox.",
        "The frog sat by the river. The frog was green. The fox and the frog were friends.");

    @Test
    void commonWordsOfTheCorpusBecomeSingleTokens() throws IOException {
      int learned = TokenizerFiles.write(dir, STORIES, 512, 0, 1, 1024);
      try (Tokenizer t = Tokenizer.load(dir)) {
        assertThat(t.vocabSize()).isEqualTo(512);
        for (String word : List.of(" fox", " frog", " river", "The", " the"))
          assertThat(t.encode(word)).as(word).hasSize(1);
        assertThat(t.encode(" elephant").length).isGreaterThan(1); // never seen: bytes and small merges
        assertThat(t.decode(t.encode(STORIES.get(0)), false)).isEqualTo(STORIES.get(0));
        assertThat(t.idToToken(learned)).contains(TokenizerFiles.placeholder(0)); // a pair seen once is not merged
      }
    }

    @Test
    void mergesAreTheTrainersOnTheGivenTexts() throws IOException {
      TokenizerFiles.write(dir, 300, 0, 1, 1024);
      JsonNode merges = JSON.readTree(dir.resolve("tokenizer.json").toFile()).get("model").get("merges");
      TokenizerFiles.write(dir, STORIES, 300, 0, 1, 1024);
      JsonNode own = JSON.readTree(dir.resolve("tokenizer.json").toFile()).get("model").get("merges");
      assertThat(own).hasSize(300 - 19 - 256).isNotEqualTo(merges);
      BpeTrainer.Result trained = BpeTrainer.train(STORIES, 2, 300 - 19 - 256);
      for (int i = 0; i < own.size(); i++)
        assertThat(own.get(i).asText()).isEqualTo(trained.merges().get(i).left() + " " + trained.merges().get(i).right());
    }

    @Test
    void specialsAndTemplateAreTheDemoModelsOnes() throws IOException {
      TokenizerFiles.write(dir, STORIES, 512, 0, 1, 1024);
      JsonNode config = JSON.readTree(dir.resolve("tokenizer_config.json").toFile());
      assertThat(config.get("chat_template").asText()).isEqualTo(TokenizerFiles.chatTemplate());
      assertThat(config.get("model_max_length").asInt()).isEqualTo(1024);
      try (Tokenizer t = Tokenizer.load(dir)) {
        for (int id = 0; id < TokenizerFiles.SPECIAL_TOKENS.size(); id++)
          assertThat(t.idToToken(id)).contains(TokenizerFiles.SPECIAL_TOKENS.get(id));
        assertThat(t.encode("<｜User｜>The fox<｜Assistant｜>")).startsWith(3).endsWith(4);
      }
    }
  }

  @Nested
  class Determinism {
    @Test
    void twoTrainingsGiveIdenticalMerges() {
      List<String> corpus = TokenizerFiles.Corpus.texts();
      BpeTrainer.Result a = BpeTrainer.train(corpus, 2, 3000);
      BpeTrainer.Result b = BpeTrainer.train(corpus, 2, 3000);
      assertThat(a).isEqualTo(b);
      assertThat(a).isEqualTo(TokenizerFiles.Corpus.trained().truncate(3000));
    }

    @Test
    void twoWritesGiveIdenticalBytes(@TempDir Path other) throws IOException {
      TokenizerFiles.write(dir, 32768, 0, 1);
      TokenizerFiles.write(other, 32768, 0, 1);
      for (String file : List.of("tokenizer.json", "tokenizer_config.json")) {
        assertThat(Files.readAllBytes(dir.resolve(file))).as(file).isEqualTo(Files.readAllBytes(other.resolve(file)));
      }
    }

    @Test
    void tiesGoToTheLexicographicallySmallerPair() {
      // Words "cd", "Ġab", "Ġcd", "Ġab": (a,b), (c,d) and (Ġ,a) each occur twice; "a" < "c" < "Ġ".
      BpeTrainer.Result r = BpeTrainer.train(List.of("cd ab cd ab"), 2, 10);
      assertThat(r.merges()).extracting(m -> m.left() + " " + m.right())
          .containsExactly("a b", "c d", "Ġ ab");
    }
  }

  @Nested
  class AgreementWithHuggingFace {
    /** Our Java pre-tokenizer + a naive BPE must give exactly the ids the Rust runtime gives. */
    @Test
    void naiveBpeOverJavaPreTokensMatchesTheRuntime() throws IOException {
      TokenizerFiles.write(dir, 32768, 0, 1);
      JsonNode model = JSON.readTree(dir.resolve("tokenizer.json").toFile()).get("model");
      Map<String, Integer> vocab = new HashMap<>();
      model.get("vocab").properties().forEach(e -> vocab.put(e.getKey(), e.getValue().asInt()));
      Map<String, Integer> ranks = new HashMap<>();
      for (int i = 0; i < model.get("merges").size(); i++) ranks.put(model.get("merges").get(i).asText(), i);
      try (Tokenizer t = Tokenizer.load(dir)) {
        List<String> texts = new ArrayList<>(TokenizerFiles.Corpus.texts());
        texts.add(TokenizerTest.MIXED + TokenizerTest.EMOJI + " \u00A0\u3000x\u2028y 123456789 1,234.5");
        for (String text : texts) {
          List<Integer> expected = new ArrayList<>();
          for (String piece : PreTokenizer.split(text)) {
            for (String token : naiveBpe(ByteLevel.encode(piece), ranks)) expected.add(vocab.get(token));
          }
          assertThat(t.encode(text)).containsExactly(expected.stream().mapToInt(Integer::intValue).toArray());
        }
      }
    }

    private static List<String> naiveBpe(String word, Map<String, Integer> ranks) {
      List<String> symbols = new ArrayList<>();
      for (char c : word.toCharArray()) symbols.add(String.valueOf(c));
      while (true) {
        int best = -1;
        int bestRank = Integer.MAX_VALUE;
        for (int i = 0; i + 1 < symbols.size(); i++) {
          Integer rank = ranks.get(symbols.get(i) + " " + symbols.get(i + 1));
          if (rank != null && rank < bestRank) {
            bestRank = rank;
            best = i;
          }
        }
        if (best < 0) return symbols;
        symbols.set(best, symbols.get(best) + symbols.remove(best + 1));
      }
    }
  }
}
