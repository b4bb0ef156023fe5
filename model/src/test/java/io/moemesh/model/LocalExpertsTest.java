package io.moemesh.model;

import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.NativeKernels;
import io.moemesh.kernels.ReferenceKernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.moe.Routing;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The A8W8 routed experts: one grouped call per projection gives the bits of the expert-by-expert path (outputs in BF16). */
class LocalExpertsTest {
  private static final int EXPERTS = 16, DIM = 67, INTER = 45, TOKENS = 9, TOPK = 3;

  @ParameterizedTest(name = "gate and up stacked: {0}")
  @ValueSource(booleans = {true, false})
  void int8RoutedExpertsEqualTheExpertByExpertPathBitForBit(boolean stacked) {
    var random = new Random(3);
    try (var arena = TensorArena.open(); var scratch = TensorArena.open(); var two = NativeKernels.create(2)) {
      Mlp[] experts = new Mlp[EXPERTS];
      for (int e = 0; e < EXPERTS; e++)
        experts[e] = e % 5 == 4 ? null // never routed to, not held
            : mlp(arena, random, stacked);
      Tensor ids = arena.allocate(DType.I32, TOKENS, TOPK), gateWeights = arena.allocate(DType.F32, TOKENS, TOPK);
      for (int t = 0; t < TOKENS; t++) {
        for (int j = 0; j < TOPK; j++) { // 3 distinct experts per token; 4, 9 and 14 (not held) and 15 (held) get none
          ids.setInt(t * TOPK + j, (t + 5 * j) % 12 + (t + 5 * j) % 12 / 4);
          gateWeights.setFloat(t * TOPK + j, random.nextFloat());
        }
      }
      Routing routing = Routing.of(ids, gateWeights, EXPERTS);
      Tensor x = arena.allocate(DType.F32, TOKENS, DIM);
      for (long i = 0; i < x.numElements(); i++) x.setFloat(i, random.nextFloat() * 2 - 1);
      var backend = new LocalExperts(Map.of(0, experts), Map.of(), Precision.INT8);
      for (Kernels k : List.of(two, new ReferenceKernels())) {
        Tensor grouped = arena.allocate(DType.F32, TOKENS, DIM), perExpert = arena.allocate(DType.F32, TOKENS, DIM);
        grouped.copyFrom(x);
        perExpert.copyFrom(x);
        backend.routed(k, 0, grouped, x, routing, scratch);
        expertByExpert(k, experts, perExpert, x, routing, scratch);
        assertThat(grouped.toFloatArray()).as(k.name()).containsExactly(perExpert.toFloatArray());
        assertThat(grouped.toFloatArray()).as("the experts added something").isNotEqualTo(x.toFloatArray());
      }
    }
  }

  /** The A8W8 MoE layer as it was before the grouped op: a matmulInt8 call per expert and projection. */
  private static void expertByExpert(Kernels k, Mlp[] experts, Tensor out, Tensor x, Routing routing, TensorArena scratch) {
    int n = routing.tokenRows().length;
    Tensor rows = scratch.ofInts(routing.tokenRows(), n);
    Tensor xq = scratch.allocate(DType.I8, n, DIM), xs = scratch.allocate(DType.F32, n);
    Tensor gate = scratch.allocate(DType.F32, n, INTER), up = scratch.allocate(DType.F32, n, INTER);
    Tensor y = scratch.allocate(DType.F32, n, DIM);
    k.gatherQuantize(xq, xs, x, rows);
    for (int e = 0; e < EXPERTS; e++) {
      int from = routing.expertOffsets()[e], to = routing.expertOffsets()[e + 1];
      if (to == from) continue;
      experts[e].w1().applyInt8(k, gate.rows(from, to), xq.rows(from, to), xs.rows(from, to));
      experts[e].w3().applyInt8(k, up.rows(from, to), xq.rows(from, to), xs.rows(from, to));
    }
    k.siluMul(gate, gate, up);
    Tensor hq = scratch.allocate(DType.I8, n, INTER), hs = scratch.allocate(DType.F32, n);
    k.quantizeRows(hq, hs, gate);
    for (int e = 0; e < EXPERTS; e++) {
      int from = routing.expertOffsets()[e], to = routing.expertOffsets()[e + 1];
      if (to > from) experts[e].w2().applyInt8(k, y.rows(from, to), hq.rows(from, to), hs.rows(from, to));
    }
    Tensor yb = scratch.allocate(DType.BF16, n, DIM); // expert outputs leave the experts in BF16
    k.convert(yb, y);
    k.convert(y, yb);
    k.scatterAdd(out, y, rows, scratch.ofFloats(routing.weights(), n));
  }

  /** Gate and up apart, or stacked in one matrix (w13) of which they are views, as the loader makes them. */
  private static Mlp mlp(TensorArena arena, Random random, boolean stacked) {
    if (!stacked) return new Mlp(linear(arena, random, INTER, DIM), linear(arena, random, DIM, INTER), linear(arena, random, INTER, DIM));
    Linear w13 = linear(arena, random, 2 * INTER, DIM), w2 = linear(arena, random, DIM, INTER);
    return new Mlp(rows(w13, 0, INTER), w2, rows(w13, INTER, 2 * INTER), w13);
  }

  private static Linear rows(Linear l, int from, int to) {
    return new Linear(l.weight().rows(from, to), l.scales().rows(from, to));
  }

  @Test
  void aStackedSharedExpertGivesTheBitsOfItsProjectionsApart() {
    var random = new Random(4);
    try (var arena = TensorArena.open(); var scratch = TensorArena.open(); var two = NativeKernels.create(2)) {
      Mlp stacked = mlp(arena, random, true), apart = new Mlp(stacked.w1(), stacked.w2(), stacked.w3());
      Tensor x = arena.allocate(DType.F32, TOKENS, DIM);
      for (long i = 0; i < x.numElements(); i++) x.setFloat(i, random.nextFloat() * 2 - 1);
      Tensor xq = arena.allocate(DType.I8, TOKENS, DIM), xs = arena.allocate(DType.F32, TOKENS);
      two.quantizeRows(xq, xs, x);
      for (Kernels k : List.of(two, new ReferenceKernels())) {
        Tensor[] outs = new Tensor[4];
        for (int i = 0; i < 4; i++) outs[i] = arena.allocate(DType.F32, TOKENS, DIM);
        stacked.apply(k, outs[0], x, scratch);
        apart.apply(k, outs[1], x, scratch);
        new LocalExperts(Map.of(), Map.of(0, stacked), Precision.INT8).sharedQuantized(k, 0, outs[2], xq, xs, scratch);
        new LocalExperts(Map.of(), Map.of(0, apart), Precision.INT8).sharedQuantized(k, 0, outs[3], xq, xs, scratch);
        assertThat(outs[0].toFloatArray()).as(k.name() + " apply").containsExactly(outs[1].toFloatArray());
        // the down-projection's input quantized as it is made (siluMulQuantize) against siluMul, then w2 quantizing it
        Tensor gateUp = scratch.allocate(DType.F32, TOKENS, 2 * INTER), unfused = arena.allocate(DType.F32, TOKENS, DIM);
        stacked.w13().apply(k, gateUp, x, scratch);
        k.siluMul(gateUp.cols(0, INTER), gateUp.cols(0, INTER), gateUp.cols(INTER, 2 * INTER));
        stacked.w2().apply(k, unfused, gateUp.cols(0, INTER), scratch);
        assertThat(outs[0].toFloatArray()).as(k.name() + " fused against unfused").containsExactly(unfused.toFloatArray());
        assertThat(outs[2].toFloatArray()).as(k.name() + " sharedQuantized").containsExactly(outs[3].toFloatArray());
        assertThat(outs[0].toFloatArray()).as("the expert computed something").isNotEqualTo(new float[TOKENS * DIM]);
      }
    }
  }

  private static Linear linear(TensorArena arena, Random random, int out, int in) {
    Tensor w = arena.allocate(DType.I8, out, in), s = arena.allocate(DType.F32, out);
    for (long i = 0; i < w.numElements(); i++) w.setByte(i, (byte) (random.nextInt(255) - 127));
    for (int o = 0; o < out; o++) s.setFloat(o, 1e-3f * (1 + random.nextFloat()));
    return new Linear(w, s);
  }
}
