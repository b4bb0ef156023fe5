package io.moemesh.kernels;

import static io.moemesh.kernels.ContractBase.rowsByLength;
import static io.moemesh.kernels.ContractBase.seed;
import static io.moemesh.kernels.DType.F32;
import static io.moemesh.kernels.DType.I32;
import static io.moemesh.kernels.DType.I8;
import static io.moemesh.kernels.TestTensors.absolute;
import static io.moemesh.kernels.TestTensors.assertBitEqual;
import static io.moemesh.kernels.TestTensors.garbage;
import static io.moemesh.kernels.TestTensors.rowScaled;
import static io.moemesh.kernels.TestTensors.uniform;

import io.moemesh.kernels.ContractChecks.Call;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The contract of the MoE routing ops — moeGate, gatherQuantize, scatterAdd — one interface per op, run as a
 * {@code @Nested} group of {@link KernelsContract}. The expert ids, the gathered INT8 rows and the scattered
 * sums must match the reference bit for bit; the gate's weights within tolerance of |expected|.
 */
final class RoutingContract {
  private RoutingContract() {}

  interface MoeGate extends ContractBase {
    /** (experts, gate, bias?): DeepSeek-V3, V2-style, V2-Lite-style (no groups, no bias), and odd shapes. */
    static Stream<Arguments> gates() {
      List<Arguments> cases = new ArrayList<>();
      Object[][] gates = {
          {256, new GateParams(8, 8, 4, true, 2.5f), true},
          {160, new GateParams(6, 8, 3, false, 16f), true},
          {64, new GateParams(6, 1, 1, false, 1f), false},
          {8, new GateParams(2, 4, 2, true, 2.5f), true},
          {15, new GateParams(7, 5, 3, true, 1.5f), false},
          {12, new GateParams(12, 1, 1, true, 1f), true},
      };
      for (int n : ROWS) for (Object[] g : gates) cases.add(Arguments.of(n, g[0], g[1], g[2]));
      return cases.stream();
    }

    /** The gate on in = {logits} or {logits, bias}. */
    static Call call(GateParams params) {
      return (k, out, in) -> k.moeGate(out[0], out[1], in[0], in.length > 1 ? in[1] : null, params);
    }

    private void compare(Tensor logits, Tensor bias, GateParams params) {
      Tensor[] in = bias == null ? new Tensor[] {logits} : new Tensor[] {logits, bias};
      int n = Math.toIntExact(logits.numRows());
      Tensor[] outs = {garbage(arena(), I32, n, params.topk()), garbage(arena(), F32, n, params.topk())};
      Tensor[] actual = check().actual("moeGate", call(params), in, outs);
      Tensor[] expected = check().expected(call(params), in, outs);
      assertBitEqual(actual[0], expected[0], "moeGate expert ids");
      assertWithinTolerance("moeGate", actual[1], expected[1], absolute(expected[1]));
    }

    @ParameterizedTest(name = "n {0}, {1} experts, {2}, bias {3}")
    @MethodSource("gates")
    default void choosesTheReferenceExpertsWithWeightsWithinTolerance(int n, int experts, GateParams params,
        boolean withBias) {
      var random = new Random(seed(n, experts, params, withBias));
      Tensor logits = uniform(arena(), random, F32, 4, n, experts);
      compare(logits, withBias ? uniform(arena(), random, F32, 0.5f, experts) : null, params);
    }

    @Test
    default void breaksTiesAsTheReferenceDoes() {
      var random = new Random(30);
      Tensor logits = arena().allocate(F32, 17, 32);
      for (long i = 0; i < logits.numElements(); i++) logits.setFloat(i, random.nextInt(3) - 1);
      compare(logits, null, new GateParams(6, 4, 2, true, 2.5f));
      compare(logits, arena().allocate(F32, 32), new GateParams(6, 8, 3, false, 1f));
    }

    @Test
    default void rowsAreIndependentOfTheBatch() {
      var random = new Random(31);
      Tensor logits = uniform(arena(), random, F32, 4, 17, 256);
      Tensor bias = uniform(arena(), random, F32, 0.5f, 256);
      var params = new GateParams(8, 8, 4, true, 2.5f);
      check().rowsIndependent("moeGate",
          (k, out, from, to) -> k.moeGate(out[0], out[1], logits.rows(from, to), bias, params), 17,
          garbage(arena(), I32, 17, 8), garbage(arena(), F32, 17, 8));
    }

    @Test
    default void acceptsRowStridedLogitsAndOffsetOutputs() {
      var random = new Random(32);
      Tensor[] outs = {garbage(arena(), I32, 5, 8), garbage(arena(), F32, 5, 8)};
      Tensor[] in = {uniform(arena(), random, F32, 4, 5, 256), uniform(arena(), random, F32, 0.5f, 256)};
      check().viewsAgree("moeGate", call(new GateParams(8, 8, 4, true, 2.5f)), in, outs, outs[0], outs[1]);
    }

    @Test
    default void rejectsWrongDtypesShapesAndGates() {
      TensorArena arena = arena();
      ContractChecks check = check();
      var random = new Random(33);
      Tensor ids = garbage(arena, I32, 3, 2);
      Tensor weights = garbage(arena, F32, 3, 2);
      Tensor logits = uniform(arena, random, F32, 4, 3, 8);
      var gate = new GateParams(2, 4, 2, true, 2.5f);
      check.rejected("moeGate", k -> k.moeGate(ids, weights, logits, uniform(arena, random, F32, 1, 7), gate), ids, weights);
      check.rejected("moeGate", k -> k.moeGate(ids, weights, logits, null, new GateParams(2, 3, 2, true, 1f)), ids, weights);
      check.rejected("moeGate", k -> k.moeGate(ids, weights, logits, null, new GateParams(5, 4, 2, true, 1f)), ids, weights);
      check.rejected("moeGate", k -> k.moeGate(garbage(arena, F32, 3, 2), weights, logits, null, gate), ids, weights);
      check.rejected("moeGate", k -> k.moeGate(ids, weights, uniform(arena, random, F32, 1, 4, 8), null, gate), ids, weights);
      // ids and weights must be contiguous (the C side writes them without a row stride).
      Tensor stridedIds = garbage(arena, I32, 3, 5).cols(1, 3);
      check.rejected("moeGate", k -> k.moeGate(stridedIds, weights, logits, null, gate), stridedIds, weights);
    }
  }

  interface GatherQuantize extends ContractBase {
    static Stream<Arguments> shapes() {
      return rowsByLength();
    }

    static Call call() {
      return (k, out, in) -> k.gatherQuantize(out[0], out[1], in[0], in[1]);
    }

    /** x: 5 rows of varied magnitude (row 3 all zeros); rows: r ids in [0, 5), repeats likely. */
    private Tensor[] inputs(Random random, int r, int d) {
      Tensor x = rowScaled(arena(), random, F32, 5, d);
      for (int j = 0; j < d; j++) x.setFloat(3L * d + j, 0f);
      return new Tensor[] {x, TestTensors.ints(arena(), random, 0, 5, r)};
    }

    @ParameterizedTest(name = "{0} rows of length {1}")
    @MethodSource("shapes")
    default void matchesReferenceBitForBit(int r, int d) {
      check().exact("gatherQuantize", call(), inputs(new Random(seed(r, d)), r, d), garbage(arena(), I8, r, d),
          garbage(arena(), F32, r));
    }

    @Test
    default void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(38), 17, 64);
      check().rowsIndependent("gatherQuantize",
          (k, out, from, to) -> k.gatherQuantize(out[0], out[1], in[0], in[1].rows(from, to)), 17,
          garbage(arena(), I8, 17, 64), garbage(arena(), F32, 17));
    }

    @Test
    default void acceptsRowStridedViews() {
      check().viewsAgree("gatherQuantize", call(), inputs(new Random(39), 6, 67),
          new Tensor[] {garbage(arena(), I8, 6, 67), garbage(arena(), F32, 6)});
    }

    @Test
    default void rejectsRowIdsOutOfRangeWritingNothing() {
      TensorArena arena = arena();
      Tensor q = garbage(arena, I8, 3, 8);
      Tensor scales = garbage(arena, F32, 3);
      Tensor x = inputs(new Random(40), 3, 8)[0];
      for (int bad : new int[] {-1, 5}) {
        Tensor rows = arena.ofInts(new int[] {0, 4, bad}, 3);
        check().rejected("gatherQuantize", k -> k.gatherQuantize(q, scales, x, rows), q, scales);
      }
      check().rejected("gatherQuantize", k -> k.gatherQuantize(q, scales, x, arena.ofInts(new int[] {0, 1}, 2)), q, scales);
      Tensor stridedRows = arena.ofInts(new int[] {0, 9, 1, 9, 2, 9}, 3, 2).cols(0, 1); // (3, 1) with row stride 2
      check().rejected("gatherQuantize", k -> k.gatherQuantize(q, scales, x, stridedRows), q, scales);
    }
  }

  interface ScatterAdd extends ContractBase {
    static Stream<Arguments> shapes() {
      return rowsByLength();
    }

    static Call call() {
      return (k, out, in) -> k.scatterAdd(out[0], in[0], in[1], in[2]);
    }

    /** y (r, d), rows: r ids in [0, 5) (repeats likely), weights (r). */
    private Tensor[] inputs(Random random, int r, int d) {
      return new Tensor[] {uniform(arena(), random, F32, 3, r, d), TestTensors.ints(arena(), random, 0, 5, r),
          uniform(arena(), random, F32, 1, r)};
    }

    @ParameterizedTest(name = "{0} rows of length {1}")
    @MethodSource("shapes")
    default void matchesReferenceBitForBit(int r, int d) {
      var random = new Random(seed(r, d));
      check().exact("scatterAdd", call(), inputs(random, r, d), uniform(arena(), random, F32, 10, 5, d));
    }

    @Test
    default void addsInRowOrderAsIfOneRowAtATime() {
      var random = new Random(41);
      Tensor[] in = inputs(random, 17, 64);
      Tensor initial = uniform(arena(), random, F32, 10, 5, 64);
      Tensor batch = check().actual("scatterAdd", call(), in, initial)[0];
      Tensor oneByOne = TestTensors.copy(arena(), initial);
      for (int i = 0; i < 17; i++)
        kernels().scatterAdd(oneByOne, in[0].rows(i, i + 1), in[1].rows(i, i + 1), in[2].rows(i, i + 1));
      assertBitEqual(batch, oneByOne, "scatterAdd batch vs one row at a time");
    }

    @Test
    default void acceptsRowStridedViews() {
      var random = new Random(42);
      check().viewsAgree("scatterAdd", call(), inputs(random, 6, 67),
          new Tensor[] {uniform(arena(), random, F32, 10, 5, 67)});
    }

    @Test
    default void rejectsRowIdsOutOfRangeWritingNothing() {
      TensorArena arena = arena();
      var random = new Random(43);
      Tensor out = uniform(arena, random, F32, 1, 5, 8);
      Tensor[] in = inputs(random, 3, 8);
      for (int bad : new int[] {-1, 5}) {
        Tensor rows = arena.ofInts(new int[] {0, 4, bad}, 3);
        check().rejected("scatterAdd", k -> k.scatterAdd(out, in[0], rows, in[2]), out);
      }
      check().rejected("scatterAdd", k -> k.scatterAdd(out, in[0], in[1], uniform(arena, random, F32, 1, 2)), out);
      check().rejected("scatterAdd", k -> k.scatterAdd(out, uniform(arena, random, F32, 1, 3, 9), in[1], in[2]), out);
    }
  }
}
