package io.moemesh.kernels;

import static io.moemesh.kernels.DType.BF16;
import static io.moemesh.kernels.DType.F32;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/** The reference as a whole: its name, and the messages it rejects bad input with. */
class ReferenceKernelsTest extends ReferenceFixture {
  @Test
  void isNamedReference() {
    assertThat(kernels.name()).isEqualTo("reference");
  }

  /** Bad input names the op, and the argument or shapes at fault. */
  @Nested
  class BadInput {
    @Test
    void shapeMismatchNamesTheOpAndTheShapes() {
      assertThatThrownBy(() -> kernels.matmul(arena.allocate(F32, 2, 4), arena.allocate(F32, 2, 3), arena.allocate(F32, 4, 5)))
          .isInstanceOf(KernelException.class)
          .hasMessageStartingWith("matmul: ")
          .hasMessageContaining("F32(2, 3)")
          .hasMessageContaining("F32(4, 5)");
    }

    @Test
    void dtypeMismatchNamesTheArgument() {
      Tensor bf16X = arena.allocate(BF16, 1, 4);
      assertThatThrownBy(() -> kernels.rmsNorm(arena.allocate(F32, 1, 4), bf16X, arena.allocate(F32, 4), 1e-6f))
          .isInstanceOf(KernelException.class)
          .hasMessageStartingWith("rmsNorm: x must be F32, got BF16(1, 4)");
    }

    @TestFactory
    Stream<DynamicTest> everyOpNamesItselfWhenGivenATensorOfAClosedArena() {
      TensorArena dead = TensorArena.open();
      var calls = SampleCalls.all(arena, dead);
      dead.close();
      return calls.stream().map(c -> DynamicTest.dynamicTest(c.op(), () ->
          assertThatThrownBy(() -> c.call().accept(kernels)).isInstanceOf(KernelException.class)
              .hasMessageStartingWith(c.op() + ": ").hasMessageContaining("closed arena")));
    }
  }
}
