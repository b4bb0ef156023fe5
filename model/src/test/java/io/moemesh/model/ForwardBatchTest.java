package io.moemesh.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link ForwardBatch#rows}: picked rows keep their tokens, positions, pages and prompt lengths, runs stay chunks. */
class ForwardBatchTest {
  private static final int[] PAGES_A = {3, 4}, PAGES_B = {7};

  /** Two sequences: A at positions 10-14 (prompt of 12), B at positions 5-7 (prompt of 0). */
  private static ForwardBatch twoSequences() {
    return new ForwardBatch(new int[] {100, 101, 102, 103, 104, 200, 201, 202}, new int[] {10, 11, 12, 13, 14, 5, 6, 7},
        List.of(new ForwardBatch.SequenceChunk(0, 5, 12, PAGES_A), new ForwardBatch.SequenceChunk(5, 3, 0, PAGES_B)), new int[] {4, 7});
  }

  @Test
  void consecutiveRowsOfOneChunkStayOneChunkAndChunksNeverMerge() {
    ForwardBatch picked = twoSequences().rows(new int[] {1, 2, 4, 5, 6});
    assertThat(picked.tokens()).containsExactly(101, 102, 104, 200, 201);
    assertThat(picked.positions()).containsExactly(11, 12, 14, 5, 6);
    assertThat(picked.logitRows()).containsExactly(0, 1, 2, 3, 4);
    assertThat(picked.sequences()).containsExactly(new ForwardBatch.SequenceChunk(0, 2, 12, PAGES_A),
        new ForwardBatch.SequenceChunk(2, 1, 12, PAGES_A), new ForwardBatch.SequenceChunk(3, 2, 0, PAGES_B));
  }

  @Test
  void theLastRowOfOneChunkAndTheFirstOfTheNextAreTwoChunks() {
    ForwardBatch picked = twoSequences().rows(new int[] {4, 5});
    assertThat(picked.sequences()).containsExactly(new ForwardBatch.SequenceChunk(0, 1, 12, PAGES_A), new ForwardBatch.SequenceChunk(1, 1, 0, PAGES_B));
  }

  @Test
  void rowsMustAscendInsideTheBatch() {
    assertThatThrownBy(() -> twoSequences().rows(new int[] {2, 1})).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> twoSequences().rows(new int[] {3, 3})).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> twoSequences().rows(new int[] {8})).isInstanceOf(IllegalArgumentException.class);
  }
}
