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
  void atLeastOneMissIsNeeded() {
    assertThatThrownBy(() -> new ShardLiveness(2, 0)).hasMessageContaining("at least 1");
  }
}
