package io.moemesh.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class TokenizerTest {
  static final String ENGLISH = "When in the Course of human events, it becomes necessary for one people to dissolve "
      + "the political bands which have connected them with another.";
  static final String CHINESE = "道可道，非常道；名可名，非常名。今天天气很好，我们去公园散步吧。";
  static final String CODE = "def f(x):\n\tif x > 10:\n\t\treturn x * 2  # double\n    return [i for i in range(x)]\n";
  static final String EMOJI = "Family 👨‍👩‍👧‍👦, thumbs 👍🏻👍🏿, flags 🇺🇸🇯🇵, rainbow 🏳️‍🌈, fire ❤️‍🔥 😀";
  static final String MIXED = "Hello 世界! Привет, мир. 12345 + 6.7e-3 = ? こんにちは 🎉 \"quotes\" ‘curly’ tab\tend\r\n";

  @TempDir static Path dir;
  static Tokenizer tokenizer;

  @BeforeAll
  static void writeAndLoad() throws IOException {
    TokenizerFiles.write(dir, 32768, 0, 1);
    tokenizer = Tokenizer.load(dir);
  }

  @AfterAll
  static void close() {
    tokenizer.close();
  }

  @Nested
  class RoundTrip {
    @ParameterizedTest
    @ValueSource(strings = {ENGLISH, CHINESE, CODE, EMOJI, MIXED, "", " ", "\n\n\n", "   leading and trailing   ",
        "a\u0000b", "99999999999", "<｜User｜>hi<｜Assistant｜><think>plan</think>answer<｜end▁of▁sentence｜>"})
    void decodeOfEncodeIsTheInput(String text) {
      int[] ids = tokenizer.encode(text);
      assertThat(tokenizer.decode(ids, false)).isEqualTo(text);
    }

    @Test
    void bundledCorpusRoundTrips() {
      for (String text : TokenizerFiles.Corpus.texts()) {
        assertThat(tokenizer.decode(tokenizer.encode(text), false)).isEqualTo(text);
      }
    }

    @Test
    void learnedMergesCompressText() {
      assertThat(tokenizer.encode(ENGLISH).length).isLessThan(ENGLISH.length() / 3);
      assertThat(tokenizer.encode(CHINESE).length).isLessThan(CHINESE.getBytes(StandardCharsets.UTF_8).length / 2);
    }

    @Test
    void loneSurrogatesBecomeReplacementCharacters() {
      assertThat(tokenizer.decode(tokenizer.encode("a\uD800b\uDC00"), false)).isEqualTo("a\uFFFDb\uFFFD");
    }
  }

  @Nested
  class SpecialTokens {
    @Test
    void eachEncodesAsOneId() {
      for (String special : TokenizerFiles.SPECIAL_TOKENS) {
        assertThat(tokenizer.encode(special)).as(special).containsExactly(tokenizer.tokenToId(special).getAsInt());
      }
    }

    @Test
    void idsFollowTheFixedLayout() {
      assertThat(tokenizer.bosId()).isZero();
      assertThat(tokenizer.eosId()).isEqualTo(1);
      assertThat(tokenizer.padId()).isEqualTo(2);
      assertThat(tokenizer.idToToken(3)).contains("<｜User｜>");
      assertThat(tokenizer.idToToken(4)).contains("<｜Assistant｜>");
    }

    @Test
    void encodeAddsBosOnlyWhenAskedAndConfigured() {
      int[] plain = tokenizer.encode("Hello");
      assertThat(plain[0]).isNotEqualTo(tokenizer.bosId());
      int[] withBos = tokenizer.encode("Hello", true);
      assertThat(withBos[0]).isEqualTo(tokenizer.bosId());
      assertThat(Arrays.copyOfRange(withBos, 1, withBos.length)).containsExactly(plain);
      assertThat(tokenizer.config().addBosToken()).isTrue();
      assertThat(tokenizer.config().addEosToken()).isFalse();
    }

    @Test
    void decodeCanSkipSpecialTokens() {
      int[] ids = tokenizer.encode("<｜begin▁of▁sentence｜>Hi<｜end▁of▁sentence｜>");
      assertThat(tokenizer.decode(ids, true)).isEqualTo("Hi");
      assertThat(tokenizer.decode(ids, false)).isEqualTo("<｜begin▁of▁sentence｜>Hi<｜end▁of▁sentence｜>");
    }

    @Test
    void onlyBosEosAndPadAreSpecial() {
      assertThat(tokenizer.specialTokens())
          .containsExactly(TokenizerFiles.BOS, TokenizerFiles.EOS, TokenizerFiles.PAD);
      assertThat(tokenizer.isSpecial(0)).isTrue();
      assertThat(tokenizer.isSpecial(3)).isFalse(); // <｜User｜> survives skipSpecialTokens, as in DeepSeek-V3
    }
  }

  @Nested
  class Vocabulary {
    @Test
    void hasExactlyTheConfiguredSize() {
      assertThat(tokenizer.vocabSize()).isEqualTo(32768);
      assertThat(tokenizer.idToToken(32767)).hasValueSatisfying(t -> assertThat(t).startsWith("<｜place▁holder▁no▁"));
    }

    @Test
    void tokenToIdAndIdToTokenAreInverse() {
      for (int id : new int[] {0, 5, 19, 100, 274, 1000, 32767}) {
        String token = tokenizer.idToToken(id).orElseThrow();
        assertThat(tokenizer.tokenToId(token)).hasValue(id);
      }
      assertThat(tokenizer.tokenToId("no such token")).isEmpty();
      assertThat(tokenizer.idToToken(-1)).isEmpty();
      assertThat(tokenizer.idToToken(32768)).isEmpty();
    }

    @Test
    void byteTokensUseTheGpt2Spelling() {
      int space = tokenizer.tokenToId("Ġ").getAsInt();
      assertThat(tokenizer.decode(new int[] {space}, false)).isEqualTo(" ");
    }

    @Test
    void decodingAnIdOutsideTheVocabularyIsAnError() {
      assertThatThrownBy(() -> tokenizer.decode(new int[] {32768}, false))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("32768");
    }
  }

  @Nested
  class Concurrency {
    @Test
    void parallelEncodesMatchSequentialOnes() throws Exception {
      List<String> texts = new ArrayList<>(List.of(ENGLISH, CHINESE, CODE, EMOJI, MIXED));
      texts.addAll(TokenizerFiles.Corpus.texts());
      List<int[]> expected = texts.stream().map(tokenizer::encode).toList();
      ExecutorService pool = Executors.newFixedThreadPool(8);
      try {
        List<Future<Boolean>> results = new ArrayList<>();
        for (int task = 0; task < 64; task++) {
          int offset = task;
          results.add(pool.submit(() -> {
            for (int i = 0; i < texts.size(); i++) {
              int k = (i + offset) % texts.size();
              int[] ids = tokenizer.encode(texts.get(k));
              if (!Arrays.equals(ids, expected.get(k))) return false;
              if (!tokenizer.decode(ids, false).equals(texts.get(k))) return false;
            }
            return true;
          }));
        }
        for (Future<Boolean> r : results) assertThat(r.get()).isTrue();
      } finally {
        pool.shutdownNow();
      }
    }

    @Test
    void callsAfterCloseFailCleanly() {
      Tokenizer other = Tokenizer.load(dir);
      other.close();
      other.close(); // idempotent
      assertThatThrownBy(() -> other.encode("x")).isInstanceOf(IllegalStateException.class);
      assertThatThrownBy(() -> other.decode(new int[] {5}, false)).isInstanceOf(IllegalStateException.class);
    }
  }

  @Nested
  class BadFiles {
    @TempDir Path bad;

    @Test
    void missingTokenizerJsonIsNamed() {
      assertThatThrownBy(() -> Tokenizer.load(bad))
          .isInstanceOf(TokenizerException.class)
          .hasMessageContaining(bad.resolve("tokenizer.json").toString()).hasMessageContaining("missing");
    }

    @Test
    void malformedTokenizerJsonIsNamed() throws IOException {
      Files.writeString(bad.resolve("tokenizer.json"), "{\"model\": {\"vocab\": ");
      assertThatThrownBy(() -> Tokenizer.load(bad))
          .isInstanceOf(TokenizerException.class)
          .hasMessageContaining(bad.resolve("tokenizer.json").toString()).hasMessageContaining("malformed JSON");
    }

    @Test
    void tokenizerJsonTheRuntimeRejectsIsNamed() throws IOException {
      Files.writeString(bad.resolve("tokenizer.json"), "{\"model\": {\"type\": \"NoSuchModel\", \"vocab\": {}}}");
      Files.writeString(bad.resolve("tokenizer_config.json"), "{}");
      assertThatThrownBy(() -> Tokenizer.load(bad))
          .isInstanceOf(TokenizerException.class)
          .hasMessageContaining(bad.resolve("tokenizer.json").toString()).hasMessageContaining("cannot load");
    }

    @Test
    void missingConfigIsNamed() throws IOException {
      Files.copy(dir.resolve("tokenizer.json"), bad.resolve("tokenizer.json"));
      assertThatThrownBy(() -> Tokenizer.load(bad))
          .isInstanceOf(TokenizerException.class)
          .hasMessageContaining(bad.resolve("tokenizer_config.json").toString()).hasMessageContaining("missing");
    }

    @Test
    void malformedConfigIsNamed() throws IOException {
      Files.copy(dir.resolve("tokenizer.json"), bad.resolve("tokenizer.json"));
      Files.writeString(bad.resolve("tokenizer_config.json"), "[1, 2");
      assertThatThrownBy(() -> Tokenizer.load(bad))
          .isInstanceOf(TokenizerException.class)
          .hasMessageContaining(bad.resolve("tokenizer_config.json").toString());
    }

    @Test
    void bosTokenOutsideTheVocabularyIsNamed() throws IOException {
      Files.copy(dir.resolve("tokenizer.json"), bad.resolve("tokenizer.json"));
      Files.writeString(bad.resolve("tokenizer_config.json"), "{\"bos_token\": \"<s>\"}");
      assertThatThrownBy(() -> Tokenizer.load(bad))
          .isInstanceOf(TokenizerException.class)
          .hasMessageContaining("tokenizer_config.json").hasMessageContaining("bos_token <s>");
    }

    @Test
    void wronglyTypedConfigFieldIsNamed() throws IOException {
      Files.copy(dir.resolve("tokenizer.json"), bad.resolve("tokenizer.json"));
      Files.writeString(bad.resolve("tokenizer_config.json"), "{\"add_bos_token\": \"yes\"}");
      assertThatThrownBy(() -> Tokenizer.load(bad))
          .isInstanceOf(TokenizerException.class).hasMessageContaining("add_bos_token");
    }
  }
}
