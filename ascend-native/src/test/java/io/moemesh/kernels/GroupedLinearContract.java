package io.moemesh.kernels;

import static io.moemesh.kernels.ContractBase.seed;
import static io.moemesh.kernels.DType.BF16;
import static io.moemesh.kernels.DType.F32;
import static io.moemesh.kernels.DType.I8;
import static io.moemesh.kernels.TestTensors.assertBitEqual;
import static io.moemesh.kernels.TestTensors.garbage;
import static io.moemesh.kernels.TestTensors.int8;
import static io.moemesh.kernels.TestTensors.uniform;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.kernels.ContractChecks.Call;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The contracts of the grouped linear ops, run as {@code @Nested} groups of {@link KernelsContract}:
 * matmulInt8Grouped bit for bit the reference and the same kernels' matmulInt8 called group by group;
 * matmulHeads bit for bit the same kernels' matmul called head by head (matmul itself is held to the reference in
 * {@link LinearOpsContract}); matmulHeadsKm (weights (heads, k, m)) bit for
 * bit the reference for an F32 x, within tolerance of it for a BF16 x, each row independent of the batch;
 * matmulHeadsKmPairs bit for bit the same kernels' matmulHeadsKm on the weights its pairs were made from.
 */
final class GroupedLinearContract {
  private GroupedLinearContract() {}

  interface MatmulInt8Grouped extends ContractBase {
    /**
     * Rows per group: one group; GEMV and GEMM sizes and empty groups mixed; a lone non-empty group; a routed
     * expert's 1 to 5 rows of a decode batch; all alike; one and two passes of the few-row kernel (8, 9) and GEMM
     * tiles with a partial last tile (10, 11, 13).
     */
    int[][] GROUPINGS = {{17}, {0, 1, 3, 4, 0, 5, 17, 2}, {0, 0, 4, 0}, {1, 2, 3, 4, 5}, {2, 2, 2}, {3, 0, 3},
        {6, 7, 8, 9, 10, 11, 13}};

    static Stream<Arguments> shapes() {
      List<Arguments> cases = new ArrayList<>();
      for (int[] sizes : GROUPINGS) for (int k : new int[] {1, 63, 64, 65, 1021}) for (int m : new int[] {1, 5, 131})
        cases.add(Arguments.of(Arrays.toString(sizes), k, m));
      return cases.stream();
    }

    /** in = {xq, xScales, rowOffsets, w[0], wScales[0], w[1], wScales[1], …}. */
    static Call call() {
      return (k, out, in) -> {
        int groups = (in.length - 3) / 2;
        Tensor[] w = new Tensor[groups], s = new Tensor[groups];
        for (int g = 0; g < groups; g++) {
          w[g] = in[3 + 2 * g];
          s[g] = in[4 + 2 * g];
        }
        k.matmulInt8Grouped(out[0], in[0], in[1], in[2], w, s);
      };
    }

    /** Inputs for groups of the given sizes; empty groups get null weights. The last x row is all 127. */
    private Tensor[] inputs(Random random, int[] sizes, int k, int m) {
      int n = Arrays.stream(sizes).sum();
      int[] offsets = new int[sizes.length + 1];
      for (int g = 0; g < sizes.length; g++) offsets[g + 1] = offsets[g] + sizes[g];
      Tensor xq = int8(arena(), random, n, k);
      for (int j = 0; j < k && n > 0; j++) xq.setByte((long) (n - 1) * k + j, (byte) 127);
      List<Tensor> in = new ArrayList<>(List.of(xq, uniform(arena(), random, F32, 0.1f, n), arena().ofInts(offsets, offsets.length)));
      for (int size : sizes) {
        in.add(size == 0 ? null : int8(arena(), random, m, k));
        in.add(size == 0 ? null : uniform(arena(), random, F32, 0.1f, m));
      }
      return in.toArray(Tensor[]::new);
    }

    @ParameterizedTest(name = "groups {0}, k {1}, m {2}")
    @MethodSource("shapes")
    default void equalsTheReferenceAndMatmulInt8GroupByGroupBitForBit(String groups, int k, int m) {
      int[] sizes = Arrays.stream(groups.replaceAll("[\\[\\] ]", "").split(",")).mapToInt(Integer::parseInt).toArray();
      Tensor[] in = inputs(new Random(seed(groups, k, m)), sizes, k, m);
      int n = Math.toIntExact(in[0].numRows());
      Tensor grouped = check().exact("matmulInt8Grouped", call(), in, garbage(arena(), F32, n, m))[0];
      Tensor perGroup = garbage(arena(), F32, n, m);
      for (int g = 0, from = 0; g < sizes.length; from += sizes[g++]) {
        if (sizes[g] == 0) continue;
        int to = from + sizes[g];
        kernels().matmulInt8(perGroup.rows(from, to), in[0].rows(from, to), in[1].rows(from, to), in[3 + 2 * g], in[4 + 2 * g]);
      }
      assertBitEqual(grouped, perGroup, "matmulInt8Grouped vs matmulInt8 group by group");
    }

    @Test
    default void acceptsGroupsThatAreAllEmpty() {
      Tensor[] in = inputs(new Random(20), new int[] {0, 0, 0}, 8, 5);
      check().exact("matmulInt8Grouped", call(), in, garbage(arena(), F32, 0, 5));
    }

    @Test
    default void acceptsRowStridedViews() {
      check().viewsAgree("matmulInt8Grouped", call(), inputs(new Random(21), new int[] {2, 5}, 67, 19),
          new Tensor[] {garbage(arena(), F32, 7, 19)});
    }

    @Test
    default void rejectsBadGroupsWithMessagesSayingWhatIsWrong() {
      var random = new Random(22);
      Tensor[] in = inputs(random, new int[] {2, 0, 1}, 8, 5);
      Tensor out = garbage(arena(), F32, 3, 5), xq = in[0], xs = in[1];
      Tensor[] w = {in[3], null, in[7]}, s = {in[4], null, in[8]};
      String args = " [args: F32(3, 5), I8(3, 8), F32(3), I32(4)]";
      rejects(out, xq, xs, arena().ofInts(new int[] {0, 2, 1, 3}, 4), w, s,
          "rowOffsets must not decrease: rowOffsets[1] = 2 > rowOffsets[2] = 1" + args);
      rejects(out, xq, xs, arena().ofInts(new int[] {0, 2, 2, 4}, 4), w, s, "rowOffsets[3] = 4 must be n = 3" + args);
      rejects(out, xq, xs, arena().ofInts(new int[] {1, 2, 2, 3}, 4), w, s, "rowOffsets[0] = 1 must be 0" + args);
      rejects(out, xq, xs, arena().ofInts(new int[] {0, 1, 2, 3}, 4), w, s,
          "group 1 has 1 rows but w[1] or wScales[1] is null" + args);
      rejects(out, xq, xs, in[2], new Tensor[] {in[3], null}, s, "w and wScales need one entry per group (3), got 2 and 3" + args);
      Tensor wide = int8(arena(), random, 5, 9);
      rejects(out, xq, xs, in[2], new Tensor[] {in[3], null, wide}, s,
          "expected last dimension 8 in I8(5, 9) [args: F32(3, 5), I8(3, 8), F32(3), I32(4), I8(5, 9), F32(5)]");
      Tensor f32 = uniform(arena(), random, F32, 1, 5, 8);
      rejects(out, xq, xs, in[2], new Tensor[] {f32, null, in[7]}, s,
          "w[0] must be I8, got F32(5, 8) [args: F32(3, 5), I8(3, 8), F32(3), I32(4), F32(5, 8), F32(5)]");
      Tensor strided = int8(arena(), random, 5, 12).cols(0, 8);
      rejects(out, xq, xs, in[2], new Tensor[] {in[3], null, strided}, s, "w[2] has row stride 12, the groups before it 8: "
          + "all must share one [args: F32(3, 5), I8(3, 8), F32(3), I32(4), I8(5, 8), F32(5)]");
      check().rejected("matmulInt8Grouped", k -> k.matmulInt8Grouped(out, xq, xs, in[2], w,
          new Tensor[] {uniform(arena(), random, F32, 1, 4), null, in[8]}), out);
      check().rejected("matmulInt8Grouped", k -> k.matmulInt8Grouped(garbage(arena(), F32, 3, 6), xq, xs, in[2], w, s), out);
      check().rejected("matmulInt8Grouped", k -> k.matmulInt8Grouped(out, xq, xs, garbage(arena(), I8, 4), w, s), out);
    }

    private void rejects(Tensor out, Tensor xq, Tensor xs, Tensor offsets, Tensor[] w, Tensor[] s, String why) {
      check().rejected("matmulInt8Grouped", k -> k.matmulInt8Grouped(out, xq, xs, offsets, w, s), out);
      assertThatThrownBy(() -> kernels().matmulInt8Grouped(out, xq, xs, offsets, w, s))
          .isInstanceOf(KernelException.class).hasMessage("matmulInt8Grouped: " + why);
    }
  }

  interface MatmulHeads extends ContractBase {
    /** (n, heads, k, m, x dtype, w dtype): W_UV at a decode token, short BF16 rows, 16 heads, odd sizes, a long k. */
    static Stream<Arguments> shapes() {
      return Stream.of(Arguments.of(1, 16, 256, 64, BF16, BF16), Arguments.of(17, 16, 64, 256, BF16, BF16),
          Arguments.of(1, 16, 64, 256, F32, BF16), Arguments.of(3, 5, 7, 9, F32, F32),
          Arguments.of(5, 3, 33, 17, BF16, BF16), Arguments.of(17, 2, 1021, 5, F32, BF16), Arguments.of(1, 1, 1, 1, F32, F32),
          Arguments.of(4, 3, 64, 40, F32, BF16));
    }

    static Call call() {
      return (k, out, in) -> k.matmulHeads(out[0], in[0], in[1]);
    }

    /**
     * {x (n, heads, k) as a column slice of a wider tensor, as MLA passes q's no-rope part; w (heads, m, k); the same x
     * as (n · heads, k) rows}.
     */
    private Tensor[] inputs(Random random, int n, int heads, int k, int m, DType xType, DType wType) {
      Tensor wide = uniform(arena(), random, xType, 1, n, heads, k + 3);
      return new Tensor[] {wide.cols(0, k), uniform(arena(), random, wType, 1, heads, m, k), wide.reshape(n * heads, k + 3).cols(0, k)};
    }

    @ParameterizedTest(name = "n {0}, heads {1}, k {2}, m {3}, x {4}, w {5}")
    @MethodSource("shapes")
    default void equalsMatmulHeadByHeadBitForBit(int n, int heads, int k, int m, DType xType, DType wType) {
      Tensor[] in = inputs(new Random(seed(n, heads, k, m, xType, wType)), n, heads, k, m, xType, wType);
      Tensor together = check().actual("matmulHeads", call(), in, garbage(arena(), F32, n, heads, m))[0];
      // head h by matmul: every (t, h') row against w[h], keeping the rows (t, h)
      Tensor rows = in[2], perHead = garbage(arena(), F32, n * heads, m), all = garbage(arena(), F32, n * heads, m);
      for (int h = 0; h < heads; h++) {
        kernels().matmul(all, rows, in[1].rows(h, h + 1).reshape(m, k));
        for (int t = 0; t < n; t++) perHead.rows(t * heads + h, t * heads + h + 1).copyFrom(all.rows(t * heads + h, t * heads + h + 1));
      }
      assertBitEqual(together, perHead.reshape(n, heads, m), "matmulHeads vs matmul head by head");
    }

    @Test
    default void acceptsRowStridedViews() {
      Tensor[] in = Arrays.copyOf(inputs(new Random(23), 3, 4, 19, 7, F32, BF16), 2);
      check().viewsAgree("matmulHeads", call(), in, new Tensor[] {garbage(arena(), F32, 3, 4, 7)}, in[1]); // w: contiguous, offset only
    }

    @Test
    default void rejectsMismatchedShapesAndDtypes() {
      var random = new Random(24);
      Tensor[] in = inputs(random, 2, 3, 8, 5, F32, F32);
      Tensor out = garbage(arena(), F32, 2, 3, 5);
      check().rejected("matmulHeads", k -> k.matmulHeads(out, in[0], uniform(arena(), random, F32, 1, 2, 5, 8)), out); // 2 heads of w
      check().rejected("matmulHeads", k -> k.matmulHeads(out, in[0], uniform(arena(), random, F32, 1, 3, 5, 9)), out); // k
      check().rejected("matmulHeads", k -> k.matmulHeads(out, in[0], uniform(arena(), random, F32, 1, 3, 6, 8)), out); // m
      check().rejected("matmulHeads", k -> k.matmulHeads(out, uniform(arena(), random, BF16, 1, 2, 3, 8), in[1]), out); // BF16 x, F32 w
      check().rejected("matmulHeads", k -> k.matmulHeads(out, in[2], in[1]), out); // rank 2
    }
  }
  interface MatmulHeadsKm extends ContractBase {
    /** (n, heads, k, m, x dtype, w dtype): W_UK at decode batches 1 and 17, W_UV laid out (k, m), odd and edge sizes. */
    static Stream<Arguments> shapes() {
      return Stream.of(Arguments.of(1, 16, 64, 256, F32, BF16), Arguments.of(17, 16, 64, 256, BF16, BF16),
          Arguments.of(3, 16, 256, 64, BF16, BF16), Arguments.of(3, 5, 7, 9, F32, F32), Arguments.of(5, 3, 33, 17, BF16, BF16),
          Arguments.of(9, 2, 1, 33, BF16, BF16), Arguments.of(8, 1, 127, 16, BF16, BF16), Arguments.of(2, 2, 129, 40, BF16, BF16),
          Arguments.of(17, 2, 1021, 5, F32, BF16), Arguments.of(1, 1, 1, 1, F32, F32), Arguments.of(4, 3, 64, 40, F32, F32));
    }

    static Call call() {
      return (k, out, in) -> k.matmulHeadsKm(out[0], in[0], in[1]);
    }

    /** {x (n, heads, k) as a column slice of a wider tensor, as MLA passes q's no-rope part; w (heads, k, m)}. */
    private Tensor[] inputs(Random random, int n, int heads, int k, int m, DType xType, DType wType) {
      Tensor wide = uniform(arena(), random, xType, 1, n, heads, k + 3);
      return new Tensor[] {wide.cols(0, k), uniform(arena(), random, wType, 1, heads, k, m)};
    }

    @ParameterizedTest(name = "n {0}, heads {1}, k {2}, m {3}, x {4}, w {5}")
    @MethodSource("shapes")
    default void matchesReference(int n, int heads, int k, int m, DType xType, DType wType) {
      Tensor[] in = inputs(new Random(seed(n, heads, k, m, xType, wType)), n, heads, k, m, xType, wType);
      if (xType == F32) {
        check().exact("matmulHeadsKm", call(), in, garbage(arena(), F32, n, heads, m));
        return;
      }
      Tensor actual = check().actual("matmulHeadsKm", call(), in, garbage(arena(), F32, n, heads, m))[0];
      Tensor expected = check().expected(call(), in, garbage(arena(), F32, n, heads, m))[0];
      float[] x = in[0].toFloatArray(), w = in[1].toFloatArray(); // logical order, though x is a column slice
      double[] magnitude = new double[n * heads * m]; // Σ_c |x[t,h,c]·w[h,c,o]|
      for (int t = 0; t < n; t++)
        for (int h = 0; h < heads; h++)
          for (int o = 0; o < m; o++)
            for (int c = 0; c < k; c++)
              magnitude[(t * heads + h) * m + o] += Math.abs((double) x[(t * heads + h) * k + c] * w[(h * k + c) * m + o]);
      assertWithinTolerance("matmulHeadsKm", actual, expected, magnitude);
    }

    @ParameterizedTest(name = "k {0}, x {1}")
    @MethodSource("batchCases")
    default void rowsAreIndependentOfTheBatch(int k, DType xType) {
      Tensor[] in = inputs(new Random(31 + k), 17, 3, k, 40, xType, BF16);
      check().rowsIndependent("matmulHeadsKm", (kernels, out, from, to) -> kernels.matmulHeadsKm(out[0], in[0].rows(from, to), in[1]),
          17, garbage(arena(), F32, 17, 3, 40));
    }

    static Stream<Arguments> batchCases() {
      return Stream.of(Arguments.of(33, BF16), Arguments.of(64, BF16), Arguments.of(256, BF16), Arguments.of(64, F32));
    }

    @Test
    default void acceptsRowStridedViews() {
      Tensor[] in = inputs(new Random(33), 3, 4, 19, 7, F32, BF16);
      check().viewsAgree("matmulHeadsKm", call(), in, new Tensor[] {garbage(arena(), F32, 3, 4, 7)}, in[1]); // w: contiguous, offset only
    }

    @Test
    default void rejectsMismatchedShapesAndDtypes() {
      var random = new Random(34);
      Tensor[] in = inputs(random, 2, 3, 8, 5, F32, F32);
      Tensor out = garbage(arena(), F32, 2, 3, 5);
      check().rejected("matmulHeadsKm", k -> k.matmulHeadsKm(out, in[0], uniform(arena(), random, F32, 1, 2, 8, 5)), out); // 2 heads of w
      check().rejected("matmulHeadsKm", k -> k.matmulHeadsKm(out, in[0], uniform(arena(), random, F32, 1, 3, 9, 5)), out); // k
      check().rejected("matmulHeadsKm", k -> k.matmulHeadsKm(out, in[0], uniform(arena(), random, F32, 1, 3, 8, 6)), out); // m
      check().rejected("matmulHeadsKm", k -> k.matmulHeadsKm(out, in[0], uniform(arena(), random, F32, 1, 3, 5, 8)), out); // (heads, m, k)
      check().rejected("matmulHeadsKm", k -> k.matmulHeadsKm(out, uniform(arena(), random, BF16, 1, 2, 3, 8), in[1]), out); // BF16 x, F32 w
      check().rejected("matmulHeadsKm", k -> k.matmulHeadsKm(out, uniform(arena(), random, F32, 1, 6, 8), in[1]), out); // rank 2
    }
  }

  interface MatmulHeadsKmPairs extends ContractBase {
    /** (n, heads, k, m): W_UK at decode batches 1, 17 and 33; odd k, m not a multiple of 32, one column, one output. */
    static Stream<Arguments> shapes() {
      return Stream.of(Arguments.of(1, 16, 64, 256), Arguments.of(17, 16, 64, 256), Arguments.of(33, 16, 64, 256),
          Arguments.of(3, 16, 256, 64), Arguments.of(5, 3, 33, 17), Arguments.of(9, 2, 1, 33), Arguments.of(8, 1, 127, 16),
          Arguments.of(2, 2, 129, 40), Arguments.of(1, 1, 1, 1));
    }

    /** {x (n, heads, k) BF16, a column slice as MLA passes it; w (heads, k, m) BF16; w's pairs}. */
    private Tensor[] inputs(Random random, int n, int heads, int k, int m) {
      Tensor x = uniform(arena(), random, BF16, 1, n, heads, k + 3).cols(0, k), w = uniform(arena(), random, BF16, 1, heads, k, m);
      Tensor pairs = arena().allocate(BF16, HeadsKmPairs.shape(heads, k, m));
      HeadsKmPairs.fill(pairs, w);
      return new Tensor[] {x, w, pairs};
    }

    @ParameterizedTest(name = "n {0}, heads {1}, k {2}, m {3}")
    @MethodSource("shapes")
    default void givesMatmulHeadsKmsBitsOnTheWeightsItsPairsHold(int n, int heads, int k, int m) {
      Tensor[] in = inputs(new Random(seed(n, heads, k, m)), n, heads, k, m);
      Tensor paired = check().actual("matmulHeadsKmPairs", (kernels, out, t) -> kernels.matmulHeadsKmPairs(out[0], t[0], t[2]), in,
          garbage(arena(), F32, n, heads, m))[0];
      Tensor asItLies = garbage(arena(), F32, n, heads, m);
      kernels().matmulHeadsKm(asItLies, in[0], in[1]);
      assertBitEqual(paired, asItLies, "matmulHeadsKmPairs vs matmulHeadsKm");
    }

    @Test
    default void rejectsPairsOfOtherWeightsAndOtherDtypes() {
      var random = new Random(35);
      Tensor[] in = inputs(random, 2, 3, 8, 40);
      Tensor out = garbage(arena(), F32, 2, 3, 40), pairs = in[2];
      Tensor pairsOfK10 = arena().allocate(BF16, HeadsKmPairs.shape(3, 10, 40)), pairsOfM70 = arena().allocate(BF16, HeadsKmPairs.shape(3, 8, 70));
      check().rejected("matmulHeadsKmPairs", k -> k.matmulHeadsKmPairs(out, in[0], pairsOfK10), out); // k
      check().rejected("matmulHeadsKmPairs", k -> k.matmulHeadsKmPairs(out, in[0], pairsOfM70), out); // m
      check().rejected("matmulHeadsKmPairs", k -> k.matmulHeadsKmPairs(out, in[0], in[1]), out); // w as it lies
      check().rejected("matmulHeadsKmPairs", k -> k.matmulHeadsKmPairs(out, uniform(arena(), random, F32, 1, 2, 3, 8), pairs), out); // F32 x
      check().rejected("matmulHeadsKmPairs", k -> k.matmulHeadsKmPairs(out, uniform(arena(), random, BF16, 1, 6, 8), pairs), out); // rank 2
      check().rejected("matmulHeadsKmPairs", k -> k.matmulHeadsKmPairs(garbage(arena(), F32, 2, 2, 40), in[0], pairs)); // heads
    }
  }
}
