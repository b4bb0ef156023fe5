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

  @Test
  void addsUpTheBytesAndMultiplyAddsOfEachCall() {
    var profiled = new ProfilingKernels(new ReferenceKernels());
    try (TensorArena arena = TensorArena.open()) {
      Tensor x = arena.allocate(DType.F32, 2, 8), w = arena.allocate(DType.BF16, 3, 8), out = arena.allocate(DType.F32, 2, 3);
      profiled.matmul(out, x, w);
      profiled.matmul(out, x, w);
      // an F32 x multiplies in F32 whatever the weight: 2 calls of out 24 + x 64 + w 48 bytes and 2·3·8 multiply-adds
      assertThat(only(profiled).work()).isEqualTo(new ProfilingKernels.Work(2 * 136, 0, 0, 2 * 48));
    }
  }

  @Test
  void groupedMatmulCountsOnlyTheWeightsOfGroupsWithRows() {
    var profiled = new ProfilingKernels(new ReferenceKernels());
    try (TensorArena arena = TensorArena.open()) {
      Tensor xq = arena.allocate(DType.I8, 3, 4), xs = arena.allocate(DType.F32, 3), out = arena.allocate(DType.F32, 3, 2);
      Tensor offsets = arena.allocate(DType.I32, 4);
      int[] bounds = {0, 2, 2, 3}; // group 1 has no rows
      for (int i = 0; i < 4; i++) offsets.setInt(i, bounds[i]);
      Tensor[] w = new Tensor[3], ws = new Tensor[3];
      for (int g = 0; g < 3; g++) {
        w[g] = arena.allocate(DType.I8, 2, 4);
        ws[g] = arena.allocate(DType.F32, 2);
      }
      profiled.matmulInt8Grouped(out, xq, xs, offsets, w, ws);
      long moved = 24 + 12 + 12 + 16 + 2 * (8 + 8); // out, xq, xScales, rowOffsets, two groups' weights and scales
      assertThat(only(profiled).work()).isEqualTo(new ProfilingKernels.Work(moved, 3 * 2 * 4, 0, 0));
    }
  }

  @Test
  void mlaDecodeReadsEachQueryRowsContextOnce() {
    var profiled = new ProfilingKernels(new ReferenceKernels());
    try (TensorArena arena = TensorArena.open()) {
      int heads = 2, rank = 4, rope = 2, pageSize = 4;
      Tensor pages = arena.allocate(DType.BF16, 3, pageSize, rank + rope), table = arena.allocate(DType.I32, 2, 2);
      Tensor lens = arena.allocate(DType.I32, 2);
      for (int i = 0; i < 4; i++) table.setInt(i, i % 3);
      lens.setInt(0, 3);
      lens.setInt(1, 6);
      Tensor ql = arena.allocate(DType.BF16, 2, heads, rank), qr = arena.allocate(DType.BF16, 2, heads, rope);
      Tensor out = arena.allocate(DType.F32, 2, heads, rank);
      profiled.mlaDecode(out, ql, qr, new PagedLatentKv(pages, table, lens), 0.5f);
      long rows = 3 + 6, moved = 64 + 32 + 16 + 16 + 8 + rows * (rank + rope) * 2;
      assertThat(only(profiled).work()).isEqualTo(new ProfilingKernels.Work(moved, 0, rows * heads * (2 * rank + rope), 0));
    }
  }

  private static ProfilingKernels.OpTime only(ProfilingKernels profiled) {
    assertThat(profiled.snapshot()).hasSize(1);
    return profiled.snapshot().getFirst();
  }
}
