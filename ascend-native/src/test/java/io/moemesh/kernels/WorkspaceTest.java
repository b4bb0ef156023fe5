package io.moemesh.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import org.junit.jupiter.api.Test;

/** {@link TensorArena#workspace()}: step scratch that is reused, zeroed (but for {@code empty}), aligned, and grows when a step needs more. */
class WorkspaceTest {
  @Test
  void allocationsAreZeroedAlignedAndReusedAfterReset() {
    try (var ws = TensorArena.workspace()) {
      Tensor a = ws.allocate(DType.F32, 3, 5);
      a.copyFrom(new float[15]);
      a.setFloat(7, 42f);
      Tensor b = ws.allocate(DType.I8, 13);
      assertThat(a.isAligned(TensorArena.ALIGNMENT)).isTrue();
      assertThat(b.isAligned(TensorArena.ALIGNMENT)).isTrue();
      ws.reset();
      Tensor again = ws.allocate(DType.F32, 3, 5);
      assertThat(again.isAligned(TensorArena.ALIGNMENT)).isTrue();
      assertThat(again.toFloatArray()).containsOnly(0f); // same memory as a, zeroed again
    }
  }

  @Test
  void emptySkipsTheZeroingButTheNextAllocateOfThatMemoryIsZeroedAgain() {
    try (var ws = TensorArena.workspace()) {
      Tensor a = ws.allocate(DType.F32, 64);
      a.setFloat(5, 42f);
      ws.reset();
      Tensor out = ws.empty(DType.F32, 64);
      assertThat(out.isAligned(TensorArena.ALIGNMENT)).isTrue();
      assertThat(out.getFloat(5)).isEqualTo(42f); // the last step's bytes: nothing spent on zeroing
      out.setFloat(60, 7f);
      ws.reset();
      assertThat(ws.allocate(DType.F32, 64).toFloatArray()).containsOnly(0f); // written through empty: still zeroed
    }
    try (var arena = TensorArena.open()) {
      assertThat(arena.empty(DType.F32, 8).toFloatArray()).containsOnly(0f); // outside a workspace: fresh memory
    }
  }

  @Test
  void aStepLargerThanTheBlockGrowsItAndKeepsEarlierTensorsOfTheStep() {
    try (var ws = TensorArena.workspace()) {
      Tensor small = ws.allocate(DType.F32, 1000);
      small.setFloat(999, 1.5f);
      int n = 5 << 20; // 20 MiB of F32: past the first 16 MiB block
      Tensor big = ws.allocate(DType.F32, n);
      big.setFloat(n - 1, 2.5f);
      assertThat(small.getFloat(999)).isEqualTo(1.5f);
      assertThat(big.getFloat(n - 1)).isEqualTo(2.5f);
      ws.reset(); // merges into one block that holds both
      Tensor first = ws.allocate(DType.F32, 1000), second = ws.allocate(DType.F32, n);
      assertThat(first.getFloat(999)).isZero();
      assertThat(second.getFloat(n - 1)).isZero();
    }
  }

  /**
   * Each block is a mapping of its own, advised for huge pages where Linux has them: the block a long prefill grows
   * the workspace to is first touched mid-step, by every request then running.
   */
  @Test
  void onLinuxEveryBlockStartsOnAHugePageAndIsAdvisedForThem() throws IOException {
    assumeTrue(HugePageMappings.available(), "no transparent huge pages here");
    try (var ws = TensorArena.workspace()) {
      Tensor first = ws.allocate(DType.F32, 1000);
      Tensor grown = ws.allocate(DType.F32, 5 << 20); // 20 MiB: past the first block, into a new one
      for (Tensor t : new Tensor[] {first, grown}) {
        assertThat(t.segment().address() % HugePageChunks.HUGE_PAGE).isZero();
        assertThat(HugePageMappings.vmFlags(t.segment().address())).contains("hg");
      }
      ws.reset(); // the merged block too
      Tensor merged = ws.allocate(DType.F32, 1000);
      assertThat(merged.segment().address() % HugePageChunks.HUGE_PAGE).isZero();
      assertThat(HugePageMappings.vmFlags(merged.segment().address())).contains("hg");
    }
  }

  @Test
  void releaseRewindsToTheMarkAndTheNextAllocationIsZeroed() {
    try (var ws = TensorArena.workspace()) {
      Tensor kept = ws.allocate(DType.F32, 4);
      kept.setFloat(3, 7f);
      long mark = ws.mark();
      Tensor temp = ws.allocate(DType.F32, 100);
      temp.setFloat(0, 9f);
      ws.release(mark);
      Tensor reused = ws.allocate(DType.F32, 100);
      assertThat(reused.getFloat(0)).isZero(); // temp's memory, zeroed again
      assertThat(kept.getFloat(3)).isEqualTo(7f); // allocated before the mark: untouched
    }
  }

  @Test
  void aStepReleasingEachLayerIsSizedByOneLayerNotTheirSum() {
    try (var ws = TensorArena.workspace()) {
      for (int step = 0; step < 2; step++) {
        ws.reset();
        for (int layer = 0; layer < 4; layer++) { // 24 MiB per layer: past a 16 MiB block every time
          long mark = ws.mark();
          Tensor a = ws.allocate(DType.F32, 3 << 20), b = ws.allocate(DType.F32, 3 << 20);
          a.setFloat(0, 1f);
          b.setFloat(0, 2f);
          assertThat(a.getFloat(0)).isEqualTo(1f);
          ws.release(mark);
        }
      }
      ws.reset();
      assertThat(ws.workspaceBlockBytes()).isBetween(24L << 20, 32L << 20); // 24 MiB + a quarter (to a huge page), not 96
    }
  }

  @Test
  void resetIsOnlyForWorkspaces() {
    try (var arena = TensorArena.open()) {
      assertThatThrownBy(arena::reset).isInstanceOf(IllegalStateException.class).hasMessageContaining("workspaces");
    }
  }
}
