package io.moemesh.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class IncrementalDetokenizerTest {
  @TempDir static Path dir;
  static Tokenizer tokenizer;

  @BeforeAll
  static void writeAndLoad() throws IOException {
    TokenizerFiles.write(dir, 1024, 0, 1); // few merges: most emoji and CJK characters span several tokens
    tokenizer = Tokenizer.load(dir);
  }

  @AfterAll
  static void close() {
    tokenizer.close();
  }

  /** Feeds ids one at a time and returns every delta, the last from finish(). */
  static List<String> stream(Tokenizer t, int[] ids, boolean skipSpecialTokens) {
    IncrementalDetokenizer detokenizer = t.newDetokenizer(skipSpecialTokens);
    List<String> deltas = new ArrayList<>();
    for (int id : ids) deltas.add(detokenizer.add(id));
    deltas.add(detokenizer.finish());
    return deltas;
  }

  @Nested
  class ByteLevel {
    @ParameterizedTest
    @ValueSource(strings = {TokenizerTest.EMOJI, TokenizerTest.CHINESE, TokenizerTest.MIXED,
        "👨‍👩‍👧‍👦👩🏽‍🔬🧑🏿‍🤝‍🧑🏻🇯🇵", "𠀀𠀁 𝄞 ﷽ ᄀᄀᄀ각ᆨᆨ", "道德经"})
    void streamsWholeCharactersOnly(String text) {
      int[] ids = tokenizer.encode(text);
      List<String> deltas = stream(tokenizer, ids, false);
      assertThat(deltas).noneMatch(d -> d.contains("\uFFFD"));
      assertThat(deltas).allMatch(d -> d.isEmpty() || !Character.isLowSurrogate(d.charAt(0)));
      assertThat(String.join("", deltas)).isEqualTo(text).isEqualTo(tokenizer.decode(ids, false));
    }

    @Test
    void holdsBackACharacterSpreadOverSeveralTokens() {
      int[] ids = tokenizer.encode("😀");
      assertThat(ids.length).as("the emoji needs several tokens at V=1024").isGreaterThan(1);
      assertThat(tokenizer.decode(new int[] {ids[0]}, false)).contains("\uFFFD"); // what a naive stream would show
      List<String> deltas = stream(tokenizer, ids, false);
      assertThat(deltas.subList(0, ids.length - 1)).allMatch(String::isEmpty);
      assertThat(deltas.get(ids.length - 1)).isEqualTo("😀");
    }

    @Test
    void finishFlushesAnIncompleteCharacterAsReplacement() {
      int[] ids = tokenizer.encode("a😀");
      IncrementalDetokenizer d = tokenizer.newDetokenizer(false);
      StringBuilder text = new StringBuilder();
      for (int i = 0; i < ids.length - 1; i++) text.append(d.add(ids[i]));
      text.append(d.finish());
      assertThat(text.toString()).startsWith("a").endsWith("\uFFFD");
      assertThat(d.add(tokenizer.encode("b")[0])).isEqualTo("b"); // reusable after finish()
    }

    @Test
    void skipsSpecialTokensButKeepsChatMarkers() {
      int[] ids = tokenizer.encode("<｜begin▁of▁sentence｜>你好<｜User｜>🙂<｜end▁of▁sentence｜>");
      assertThat(String.join("", stream(tokenizer, ids, true))).isEqualTo("你好<｜User｜>🙂");
      assertThat(String.join("", stream(tokenizer, ids, false)))
          .isEqualTo("<｜begin▁of▁sentence｜>你好<｜User｜>🙂<｜end▁of▁sentence｜>");
    }

    @Test
    void arbitraryIdSequencesConcatenateToTheFullDecode() {
      Random random = new Random(42);
      for (int trial = 0; trial < 1000; trial++) {
        int[] ids = new int[1 + random.nextInt(40)];
        for (int i = 0; i < ids.length; i++) {
          // Mostly single bytes (19..274), so that broken and overlong UTF-8 sequences are common.
          ids[i] = random.nextInt(4) == 0 ? random.nextInt(tokenizer.vocabSize()) : 19 + random.nextInt(256);
        }
        for (boolean skip : new boolean[] {false, true}) {
          assertThat(String.join("", stream(tokenizer, ids, skip)))
              .as("ids %s skip %s", java.util.Arrays.toString(ids), skip)
              .isEqualTo(tokenizer.decode(ids, skip));
        }
      }
    }
  }

  @Nested
  class OffsetTechnique {
    /** A byte-fallback BPE (as in Llama/Mistral): a character's bytes are {@code <0xNN>} tokens. */
    static final String TOKENIZER_JSON = """
        {"version": "1.0", "truncation": null, "padding": null,
         "added_tokens": [{"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
                           "normalized": false, "special": true}],
         "normalizer": null, "pre_tokenizer": null, "post_processor": null,
         "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]},
         "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                   "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": true,
                   "vocab": {"<s>": 0, "<0xE4>": 1, "<0xB8>": 2, "<0xAD>": 3, "a": 4, "b": 5, "ab": 6},
                   "merges": ["a b"]}}
        """;

    @Test
    void waitsUntilTheWindowNoLongerEndsInAReplacementCharacter(@TempDir Path other) throws IOException {
      Files.writeString(other.resolve("tokenizer.json"), TOKENIZER_JSON);
      Files.writeString(other.resolve("tokenizer_config.json"), "{\"bos_token\": \"<s>\"}");
      try (Tokenizer t = Tokenizer.load(other)) {
        assertThat(t.isByteLevel()).isFalse();
        int[] ids = {0, 4, 1, 2, 3, 6, 1, 2, 3};
        assertThat(stream(t, ids, true)).containsExactly("", "a", "", "", "中", "ab", "", "", "中", "");
        assertThat(String.join("", stream(t, ids, false))).isEqualTo(t.decode(ids, false)).isEqualTo("<s>a中ab中");
        assertThat(stream(t, new int[] {4, 1}, false)).containsExactly("a", "", "\uFFFD");
      }
    }
  }
}
