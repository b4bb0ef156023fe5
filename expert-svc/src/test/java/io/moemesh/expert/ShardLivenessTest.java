package io.moemesh.expert;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.expert.ShardLiveness.Change;
import org.junit.jupiter.api.Test;

/** {@link ShardLiveness}: lost after {@code misses} heartbeats in a row, back at the first answer after. */
class ShardLivenessTest {
  @Test
  void missesInARowMakeALossAndOneAnswerABackAgain() {
    var liveness = new ShardLiveness(2, 3);
    assertThat(liveness.record(1, true)).isEqualTo(Change.NONE);
    assertThat(liveness.record(1, false)).isEqualTo(Change.NONE);
    assertThat(liveness.record(1, true)).as("an answer resets the count").isEqualTo(Change.NONE);
    assertThat(liveness.record(1, false)).isEqualTo(Change.NONE);
    assertThat(liveness.record(1, false)).isEqualTo(Change.NONE);
    assertThat(liveness.record(1, false)).isEqualTo(Change.LOST);
    assertThat(liveness.record(1, false)).as("lost once, not again").isEqualTo(Change.NONE);
    assertThat(liveness.live()).containsExactly(true, false);
    assertThat(liveness.numLive()).isEqualTo(1);
    assertThat(liveness.allLive()).isFalse();
    assertThat(liveness.record(1, true)).isEqualTo(Change.BACK);
    assertThat(liveness.allLive()).isTrue();
  }

  @Test
  void aShardThatNeverAnsweredIsStartingNotLost() {
    var liveness = new ShardLiveness(2, 2);
    for (int i = 0; i < 10; i++) assertThat(liveness.record(1, false)).isEqualTo(Change.NONE);
    assertThat(liveness.allLive()).isTrue();
    assertThat(liveness.record(1, true)).isEqualTo(Change.NONE);
    liveness.record(1, false);
    assertThat(liveness.record(1, false)).isEqualTo(Change.LOST);
  }

  @Test
  void aShardSilentPastTheBoundWhileAHeartbeatWaitsIsLostAndBackAtItsNextAnswer() {
    long s = 1_000_000_000L;
    var liveness = new ShardLiveness(2, 3, java.time.Duration.ofMillis(3500));
    assertThat(liveness.unanswered(1, 0)).as("never answered: starting, not silent").isEqualTo(Change.NONE);
    assertThat(liveness.record(1, true, 10 * s)).isEqualTo(Change.NONE);
    assertThat(liveness.unanswered(1, 13 * s)).as("3 s without an answer").isEqualTo(Change.NONE);
    assertThat(liveness.silentSeconds(1, 13 * s)).isEqualTo(3.0);
    assertThat(liveness.unanswered(1, 13 * s + s / 2)).isEqualTo(Change.LOST);
    assertThat(liveness.unanswered(1, 20 * s)).as("lost once").isEqualTo(Change.NONE);
    assertThat(liveness.record(1, false, 21 * s)).as("its late call failing changes nothing").isEqualTo(Change.NONE);
    assertThat(liveness.record(1, true, 22 * s)).isEqualTo(Change.BACK);
    assertThat(liveness.unanswered(1, 25 * s)).isEqualTo(Change.NONE);
  }

  @Test
  void atLeastOneMissIsNeeded() {
    assertThatThrownBy(() -> new ShardLiveness(2, 0)).hasMessageContaining("at least 1");
  }
}
