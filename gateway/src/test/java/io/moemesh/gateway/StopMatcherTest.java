package io.moemesh.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class StopMatcherTest {

  /** Feeds the pieces and returns everything released, flushing at the end unless a stop string matched. */
  private static String run(StopMatcher m, String... pieces) {
    StringBuilder out = new StringBuilder();
    for (String p : pieces) out.append(m.push(p));
    return out.append(m.flush()).toString();
  }

  @Nested
  class Matching {
    @Test
    void stopInsideOnePieceCutsBeforeIt() {
      StopMatcher m = new StopMatcher(List.of("END"));
      assertThat(run(m, "abc END def")).isEqualTo("abc ");
      assertThat(m.stopped()).isTrue();
    }

    @Test
    void stopSplitAcrossPiecesNeverLeaks() {
      StopMatcher m = new StopMatcher(List.of("STOP"));
      assertThat(m.push("hello S")).isEqualTo("hello ");
      assertThat(m.push("T")).isEmpty();
      assertThat(m.push("OP and more")).isEmpty();
      assertThat(m.stopped()).isTrue();
      assertThat(m.flush()).isEmpty();
    }

    @Test
    void earliestOfSeveralStopsWins() {
      assertThat(run(new StopMatcher(List.of("zzz", "b", "a c")), "xa cyb")).isEqualTo("x");
    }

    @Test
    void nothingIsReleasedAfterAStop() {
      StopMatcher m = new StopMatcher(List.of("."));
      assertThat(m.push("one. two")).isEqualTo("one");
      assertThat(m.push("three")).isEmpty();
    }
  }

  @Nested
  class HoldingBack {
    @Test
    void aPrefixThatTurnsOutNotToBeAStopIsReleasedLater() {
      StopMatcher m = new StopMatcher(List.of("STOP"));
      assertThat(m.push("go ST")).isEqualTo("go ");
      assertThat(m.push("ART")).isEqualTo("START");
      assertThat(m.stopped()).isFalse();
    }

    @Test
    void theHeldTailIsFlushedAtTheEnd() {
      StopMatcher m = new StopMatcher(List.of("STOP"));
      assertThat(m.push("the end ST")).isEqualTo("the end ");
      assertThat(m.flush()).isEqualTo("ST");
    }

    @Test
    void withoutStopsEverythingPassesAtOnce() {
      StopMatcher m = new StopMatcher(List.of());
      assertThat(m.push("anything")).isEqualTo("anything");
      assertThat(m.flush()).isEmpty();
    }

    @Test
    void overlappingPrefixesHoldTheLongestCandidate() {
      StopMatcher m = new StopMatcher(List.of("aab"));
      assertThat(m.push("xaa")).isEqualTo("x");
      assertThat(m.push("a")).isEqualTo("a");
      assertThat(m.push("b")).isEmpty();
      assertThat(m.stopped()).isTrue();
    }
  }
}
