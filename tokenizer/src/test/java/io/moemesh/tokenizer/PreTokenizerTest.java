package io.moemesh.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class PreTokenizerTest {
  @Nested
  class Split {
    @Test
    void digitsGoInRunsOfAtMostThree() {
      assertThat(PreTokenizer.split("1234567")).containsExactly("123", "456", "7");
    }

    @Test
    void cjkRunsAreIsolated() {
      assertThat(PreTokenizer.split("道可道abc")).containsExactly("道可道", "abc");
    }

    @Test
    void wordsKeepTheirLeadingSpaceAndPunctuationStandsApart() {
      assertThat(PreTokenizer.split("Hello, world!\n\n  x")).containsExactly("Hello", ",", " world", "!\n\n", " ", " x");
    }

    @ParameterizedTest
    @ValueSource(strings = {TokenizerTest.ENGLISH, TokenizerTest.CHINESE, TokenizerTest.CODE, TokenizerTest.EMOJI,
        TokenizerTest.MIXED, "", "   ", "\t\t\n"})
    void piecesConcatenateToTheText(String text) {
      assertThat(String.join("", PreTokenizer.split(text))).isEqualTo(text);
    }
  }

  @Nested
  class Bytes {
    @Test
    void byteLevelMapIsGpt2s() {
      assertThat(ByteLevel.charOf(' ')).isEqualTo('Ġ');
      assertThat(ByteLevel.charOf('\n')).isEqualTo('Ċ');
      assertThat(ByteLevel.charOf('a')).isEqualTo('a');
      assertThat(ByteLevel.encode("é")).isEqualTo("Ã©");
      assertThat(ByteLevel.decode("Ã©")).containsExactly(0xC3, 0xA9);
      assertThat(ByteLevel.decode("<｜User｜>")).isEqualTo("<｜User｜>".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
  }
}
