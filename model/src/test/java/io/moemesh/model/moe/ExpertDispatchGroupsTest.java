package io.moemesh.model.moe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The sparse expert groups a dispatch frame carries: the dense offsets and back, and bad groups refused. */
class ExpertDispatchGroupsTest {
  @Test
  void onlyTheExpertsWithAssignmentsTravel() {
    int[] offsets = {0, 0, 2, 2, 2, 3, 3}; // 6 experts: expert 1 has 2 assignments, expert 4 has 1
    var groups = ExpertDispatch.Groups.of(offsets);
    assertThat(groups.experts()).containsExactly(1, 4);
    assertThat(groups.ends()).containsExactly(2, 3);
    assertThat(groups.expertOffsets(6)).containsExactly(offsets);
  }

  @Test
  void randomOffsetsRoundTrip() {
    var random = new SplittableRandom(7);
    for (int trial = 0; trial < 200; trial++) {
      int experts = 1 + random.nextInt(64);
      int[] offsets = new int[experts + 1];
      for (int e = 0; e < experts; e++) offsets[e + 1] = offsets[e] + (random.nextInt(3) == 0 ? random.nextInt(5) : 0);
      assertThat(ExpertDispatch.Groups.of(offsets).expertOffsets(experts)).as("trial %d", trial).containsExactly(offsets);
    }
    assertThat(ExpertDispatch.Groups.of(new int[] {0, 0, 0}).expertOffsets(2)).as("no assignments").containsExactly(0, 0, 0);
  }

  @Test
  void badGroupsAreClearErrors() {
    assertThatThrownBy(() -> new ExpertDispatch.Groups(new int[] {3, 1}, new int[] {1, 2}).expertOffsets(8)).hasMessageContaining("out of order");
    assertThatThrownBy(() -> new ExpertDispatch.Groups(new int[] {1, 1}, new int[] {1, 2}).expertOffsets(8)).hasMessageContaining("out of order");
    assertThatThrownBy(() -> new ExpertDispatch.Groups(new int[] {8}, new int[] {1}).expertOffsets(8)).hasMessageContaining("outside the 8");
    assertThatThrownBy(() -> new ExpertDispatch.Groups(new int[] {-1}, new int[] {1}).expertOffsets(8)).hasMessageContaining("out of order");
    assertThatThrownBy(() -> new ExpertDispatch.Groups(new int[] {1, 2}, new int[] {2, 2}).expertOffsets(8)).hasMessageContaining("not after 2");
    assertThatThrownBy(() -> new ExpertDispatch.Groups(new int[] {1}, new int[] {0}).expertOffsets(8)).hasMessageContaining("not after 0");
    assertThatThrownBy(() -> new ExpertDispatch.Groups(new int[] {1}, new int[] {1, 2}).expertOffsets(8)).hasMessageContaining("group ends");
  }
}
