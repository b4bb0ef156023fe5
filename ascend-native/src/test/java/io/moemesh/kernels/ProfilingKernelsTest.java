package io.moemesh.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The profiler over the reference passes the whole contract (it only delegates, and lets bad input fail as the
 * reference does), and counts what it ran, keyed by op and weight.
 */
class ProfilingKernelsTest extends KernelsContract {
  @Override
  Kernels kernels() {
    return new ProfilingKernels(new ReferenceKernels());
  }

  @Test
  void countsCallsAndTimePerOpAndWeight() {
    var profiled = new ProfilingKernels(new ReferenceKernels());
    try (TensorArena arena = TensorArena.open()) {
      Tensor x = arena.allocate(DType.F32, 2, 8), small = arena.allocate(DType.F32, 3, 8), large = arena.allocate(DType.BF16, 5, 8);
      Tensor out3 = arena.allocate(DType.F32, 2, 3), out5 = arena.allocate(DType.F32, 2, 5);
      profiled.matmul(out3, x, small);
      profiled.matmul(out3, x, small);
      profiled.matmul(out5, x, large);
      profiled.add(x, x, x);
      assertThat(profiled.snapshot()).extracting(ProfilingKernels.OpTime::op, ProfilingKernels.OpTime::calls)
          .containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple("matmul f32 3×8 · f32 x", 2L),
              org.assertj.core.groups.Tuple.tuple("matmul bf16 5×8 · f32 x", 1L), org.assertj.core.groups.Tuple.tuple("add", 1L));
      assertThat(profiled.snapshot()).allSatisfy(op -> assertThat(op.nanos()).isPositive());
      profiled.reset();
      assertThat(profiled.snapshot()).isEmpty();
    }
  }
}
