package io.moemesh.model.sampling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class TokenCountsTest {

  @Nested
  class Counting {
    @Test
    void countsPromptAndGeneratedTokensSeparately() {
      TokenCounts counts = TokenCounts.ofPrompt(5, 7, 5);
      counts.addGenerated(7);
      counts.addGenerated(9);
      counts.addGenerated(9);

      assertThat(counts.numPromptTokens()).isEqualTo(3);
      assertThat(counts.numGeneratedTokens()).isEqualTo(3);
      assertThat(counts.numDistinctTokens()).isEqualTo(3);
      assertThat(counts.inPrompt(5)).isTrue();
      assertThat(counts.inPrompt(9)).isFalse();
      assertThat(counts.generatedCount(5)).isZero();
      assertThat(counts.generatedCount(7)).isEqualTo(1);
      assertThat(counts.generatedCount(9)).isEqualTo(2);
      assertThat(counts.generatedCount(123)).isZero();
      assertThat(counts.inPrompt(123)).isFalse();
    }

    @Test
    void promptMayArriveInChunks() {
      TokenCounts counts = new TokenCounts();
      counts.addPrompt(1, 2);
      counts.addPrompt(3);
      assertThat(counts.numPromptTokens()).isEqualTo(3);
      assertThat(counts.inPrompt(3)).isTrue();
    }

    @Test
    void distinctIdsAreListedInFirstSeenOrder() {
      TokenCounts counts = TokenCounts.ofPrompt(42, 3);
      counts.addGenerated(42);
      counts.addGenerated(100);
      assertThat(counts.numDistinctTokens()).isEqualTo(3);
      assertThat(new int[] {counts.tokenIdAt(0), counts.tokenIdAt(1), counts.tokenIdAt(2)})
          .containsExactly(42, 3, 100);
      assertThat(counts.generatedCountAt(0)).isEqualTo(1);
    }
  }

  @Nested
  class Growth {
    @Test
    void keepsEveryIdExactAcrossManyRehashes() {
      TokenCounts counts = new TokenCounts();
      Set<Integer> seen = new HashSet<>();
      for (int i = 0; i < 50_000; i++) {
        int id = (i * 7919) % 129_280; // scattered ids, some repeated
        counts.addGenerated(id);
        seen.add(id);
      }
      assertThat(counts.numDistinctTokens()).isEqualTo(seen.size());
      assertThat(counts.numGeneratedTokens()).isEqualTo(50_000);
      int total = 0;
      for (int i = 0; i < counts.numDistinctTokens(); i++) {
        total += counts.generatedCount(counts.tokenIdAt(i));
      }
      assertThat(total).isEqualTo(50_000);
    }
  }

  @Nested
  class Validation {
    @Test
    void rejectsNegativeIds() {
      TokenCounts counts = new TokenCounts();
      assertThatThrownBy(() -> counts.addGenerated(-1))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("-1");
      assertThatThrownBy(() -> counts.addPrompt(3, -2)).isInstanceOf(IllegalArgumentException.class);
      assertThat(counts.numPromptTokens()).isZero();
      assertThat(counts.numDistinctTokens()).isZero();
    }
  }
}
