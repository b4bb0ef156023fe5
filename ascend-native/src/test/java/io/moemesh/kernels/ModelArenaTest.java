package io.moemesh.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link TensorArena#forModel()}: zeroed, aligned, disjoint tensors from huge-page chunks, dead after close. */
class ModelArenaTest {
  private static final int BIG = (int) (HugePageChunks.CHUNK / Float.BYTES) + 1000; // F32 elements past one chunk

  @Test
  void tensorsAreZeroedAlignedAndDisjointAcrossChunks() {
    try (var model = TensorArena.forModel()) {
      Tensor small = model.allocate(DType.I8, 13);
      Tensor[] many = new Tensor[40]; // 40 × 1 MiB: spans two chunks, leaving the first one's tail unused
      for (int i = 0; i < many.length; i++) many[i] = model.allocate(DType.F32, 1 << 18);
      Tensor big = model.allocate(DType.F32, BIG); // a mapping of its own
      Tensor after = model.empty(DType.F32, 64); // outside a workspace, empty is zeroed too

      for (Tensor t : List.of(small, big, after, many[0], many[39])) {
        assertThat(t.isAligned(TensorArena.ALIGNMENT)).isTrue();
        assertThat(isZero(t)).isTrue();
      }
      for (int i = 0; i < many.length; i++) many[i].setFloat((1 << 18) - 1, i + 0.5f); // each tensor's last element
      big.setFloat(BIG - 1, -1f);
      for (int i = 0; i < many.length; i++) {
        assertThat(many[i].getFloat((1 << 18) - 1)).isEqualTo(i + 0.5f);
        assertThat(many[i].getFloat(0)).isZero(); // no neighbour's last element landed here
      }
      assertThat(big.getFloat(BIG - 1)).isEqualTo(-1f);
      assertThat(after.getFloat(0)).isZero();
    }
  }

  @Test
  void closingKillsEveryTensor() {
    var model = TensorArena.forModel();
    Tensor small = model.allocate(DType.F32, 8), big = model.allocate(DType.F32, BIG);
    model.close();
    assertThat(small.isAlive()).isFalse();
    assertThat(big.isAlive()).isFalse();
    assertThatThrownBy(() -> big.getFloat(0)).isInstanceOf(IllegalStateException.class);
  }

  /** On Linux with transparent huge pages on (or on request), the mapping carries the advice: smaps shows "hg". */
  @Test
  void onLinuxTheMemoryIsAdvisedForHugePages() throws IOException {
    assumeTrue(HugePageMappings.available(), "no transparent huge pages here");
    try (var model = TensorArena.forModel()) {
      Tensor small = model.allocate(DType.F32, 1024), big = model.allocate(DType.F32, BIG);
      assertThat(big.segment().address() % HugePageChunks.HUGE_PAGE).isZero();
      assertThat(HugePageMappings.vmFlags(small.segment().address())).contains("hg");
      assertThat(HugePageMappings.vmFlags(big.segment().address())).contains("hg");
    }
  }

  private static boolean isZero(Tensor t) {
    MemorySegment s = t.segment();
    for (long i = 0; i < s.byteSize(); i++) if (s.get(ValueLayout.JAVA_BYTE, i) != 0) return false;
    return true;
  }
}
