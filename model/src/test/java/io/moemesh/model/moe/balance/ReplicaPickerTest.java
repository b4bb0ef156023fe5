package io.moemesh.model.moe.balance;

import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.moe.Placement;
import io.moemesh.model.moe.Routing;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** {@link ReplicaPicker}: every assignment goes to a copy of its expert, and the copies share the tokens evenly. */
class ReplicaPickerTest {
  // layer 1 of 6 experts on 2 shards × 5 slots: e0 in slots 0, 4, 6 (three copies), e1 in 1 and 9, e3 in 3 and 7
  static final Placement PLACEMENT = Placement.of(0, 2, 6, new int[][] {null, {0, 1, 2, 3, 0, 4, 0, 3, 5, 1}});
  static final int LAYER = 1;

  @Test
  void aBatchGoesRoundRobinOverTheCopiesFromTheBatchsOffset() {
    // expert 0's 1st, 2nd, … token in batch 5 take its copies 5 % 3 = 2, 0, 1, 2, …: slots 6, 0, 4, 6
    int[] slots = new int[4];
    for (int i = 0; i < slots.length; i++) slots[i] = ReplicaPicker.slot(PLACEMENT, LAYER, 0, i, 5);
    assertThat(slots).containsExactly(6, 0, 4, 6);
    assertThat(ReplicaPicker.slot(PLACEMENT, LAYER, 2, 7, 5)).as("a single copy serves everything").isEqualTo(2);
  }

  @Test
  void copiesShareEachBatchsTokensWithinOne() {
    var rng = new SplittableRandom(11);
    try (TensorArena arena = TensorArena.open()) {
      for (int batch = 0; batch < 50; batch++) {
        Routing routing = randomRouting(arena, rng, rng.nextInt(1, 40));
        int[] slots = ReplicaPicker.slots(PLACEMENT, LAYER, routing, batch);
        int[] perSlot = new int[PLACEMENT.numSlots()];
        for (int e = 0; e < routing.numExperts(); e++)
          for (int at = routing.expertOffsets()[e]; at < routing.expertOffsets()[e + 1]; at++) {
            assertThat(PLACEMENT.expertAt(LAYER, slots[at])).as("batch %d assignment %d", batch, at).isEqualTo(e);
            perSlot[slots[at]]++;
          }
        for (int e = 0; e < routing.numExperts(); e++) {
          int[] copies = Arrays.stream(PLACEMENT.slotsOf(LAYER, e)).map(s -> perSlot[s]).toArray();
          assertThat(Arrays.stream(copies).max().orElseThrow() - Arrays.stream(copies).min().orElseThrow())
              .as("batch %d expert %d: %s", batch, e, Arrays.toString(copies)).isLessThanOrEqualTo(1);
        }
        assertThat(ReplicaPicker.slots(PLACEMENT, LAYER, routing, batch)).as("deterministic").containsExactly(slots);
      }
    }
  }

  @Test
  void oneTokenPerBatchRotatesOverTheCopies() {
    int[] perSlot = new int[PLACEMENT.numSlots()];
    for (long batch = 0; batch < 6; batch++) perSlot[ReplicaPicker.slot(PLACEMENT, LAYER, 0, 0, batch)]++;
    assertThat(new int[] {perSlot[0], perSlot[4], perSlot[6]}).containsExactly(2, 2, 2);
    assertThat(ReplicaPicker.slot(PLACEMENT, LAYER, 3, 0, -1)).as("any batch number, negative too").isEqualTo(7);
  }

  /** A gate output of {@code tokens} rows choosing 2 distinct experts each. */
  static Routing randomRouting(TensorArena arena, SplittableRandom rng, int tokens) {
    int topk = 2;
    Tensor ids = arena.allocate(DType.I32, tokens, topk), weights = arena.allocate(DType.F32, tokens, topk);
    for (int t = 0; t < tokens; t++) {
      int first = rng.nextInt(6), second = (first + rng.nextInt(1, 6)) % 6;
      ids.setInt((long) t * topk, first);
      ids.setInt((long) t * topk + 1, second);
      weights.setFloat((long) t * topk, 0.5f);
      weights.setFloat((long) t * topk + 1, 0.5f);
    }
    return Routing.of(ids, weights, 6);
  }
}
