package io.moemesh.kernels;

import static io.moemesh.kernels.ContractBase.rowsByLengthFrom;
import static io.moemesh.kernels.ContractBase.seed;
import static io.moemesh.kernels.DType.BF16;
import static io.moemesh.kernels.DType.F32;
import static io.moemesh.kernels.DType.I32;
import static io.moemesh.kernels.DType.I8;
import static io.moemesh.kernels.TestTensors.garbage;
import static io.moemesh.kernels.TestTensors.int8;
import static io.moemesh.kernels.TestTensors.rowScaled;
import static io.moemesh.kernels.TestTensors.uniform;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
 * The contract of the linear ops — matmul, quantizeRows, matmulInt8, dequantizeFp8 — one interface per op,
 * run as a {@code @Nested} group of {@link KernelsContract}. The INT8 and FP8 paths must match the reference
 * bit for bit; matmul (F32 × F32 or BF16, BF16 × BF16) within tolerance of Σ|x·w|.
 */
final class LinearOpsContract {
  private LinearOpsContract() {}

  interface Matmul extends ContractBase {
    static Stream<Arguments> shapes() {
      List<Arguments> cases = new ArrayList<>();
      for (int n : ROWS) for (int k : LENGTHS) for (int m : OUTPUTS) for (DType w : List.of(F32, BF16))
        cases.add(Arguments.of(n, k, m, w));
      return cases.stream();
    }

    static Call call() {
      return (k, out, in) -> k.matmul(out[0], in[0], in[1]);
    }

    @ParameterizedTest(name = "x ({0}, {1}), w {3} ({2}, {1})")
    @MethodSource("shapes")
    default void matchesReferenceWithinToleranceOfSumOfAbsoluteProducts(int n, int k, int m, DType wType) {
      var random = new Random(seed(n, k, m, wType));
      Tensor x = uniform(arena(), random, F32, 1, n, k);
      Tensor w = uniform(arena(), random, wType, 1, m, k);
      Tensor[] in = {x, w};
      Tensor actual = check().actual("matmul", call(), in, garbage(arena(), F32, n, m))[0];
      Tensor expected = check().expected(call(), in, garbage(arena(), F32, n, m))[0];
      assertWithinTolerance("matmul", actual, expected, sumsOfAbsoluteProducts(x, w));
    }

    /** BF16 × BF16: rows 1 … 9 and 17 (GEMV, every GEMM tile edge), k at and around the 32-pair chunk. */
    static Stream<Arguments> bf16Shapes() {
      List<Arguments> cases = new ArrayList<>();
      for (int n : new int[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 17}) for (int k : new int[] {1, 31, 32, 33, 1021})
        for (int m : OUTPUTS) cases.add(Arguments.of(n, k, m));
      return cases.stream();
    }

    @ParameterizedTest(name = "x BF16 ({0}, {1}), w BF16 ({2}, {1})")
    @MethodSource("bf16Shapes")
    default void bf16TimesBf16MatchesReferenceWithinToleranceOfSumOfAbsoluteProducts(int n, int k, int m) {
      var random = new Random(seed(n, k, m, BF16));
      Tensor x = uniform(arena(), random, BF16, 1, n, k);
      Tensor w = uniform(arena(), random, BF16, 1, m, k);
      Tensor[] in = {x, w};
      Tensor actual = check().actual("matmul", call(), in, garbage(arena(), F32, n, m))[0];
      Tensor expected = check().expected(call(), in, garbage(arena(), F32, n, m))[0];
      assertWithinTolerance("matmul", actual, expected, sumsOfAbsoluteProducts(x, w));
    }

    /** Few rows take the GEMVs, more the tiles, short weight rows (≤ 256 bytes) tiles at any count: the same bits. */
    @ParameterizedTest(name = "x {0}, k {1}")
    @MethodSource("activationShapes")
    default void rowsAreIndependentOfTheBatch(DType xType, int k) {
      var random = new Random(1);
      Tensor x = uniform(arena(), random, xType, 1, 17, k);
      Tensor w = uniform(arena(), random, BF16, 1, 131, x.rowLength());
      check().rowsIndependent("matmul", (kernels, out, from, to) -> kernels.matmul(out[0], x.rows(from, to), w), 17,
          garbage(arena(), F32, 17, 131));
    }

    static Stream<Arguments> activationShapes() { // BF16 weight rows of 128, 256, 512 and 2042 bytes
      return Stream.of(Arguments.of(F32, 64), Arguments.of(F32, 128), Arguments.of(BF16, 256), Arguments.of(BF16, 1021));
    }

    static Stream<DType> activationTypes() {
      return Stream.of(F32, BF16);
    }

    @ParameterizedTest(name = "x {0}")
    @MethodSource("activationTypes")
    default void acceptsRowStridedViews(DType xType) {
      var random = new Random(2);
      Tensor[] in = {uniform(arena(), random, xType, 1, 5, 67), uniform(arena(), random, BF16, 1, 19, 67)};
      check().viewsAgree("matmul", call(), in, new Tensor[] {garbage(arena(), F32, 5, 19)});
    }

    @Test
    default void rejectsWrongDtypesAndShapes() {
      var random = new Random(3);
      TensorArena arena = arena();
      Tensor out = garbage(arena, F32, 3, 5);
      Tensor x = uniform(arena, random, F32, 1, 3, 8);
      Tensor w = uniform(arena, random, F32, 1, 5, 8);
      check().rejected("matmul", k -> k.matmul(out, uniform(arena, random, BF16, 1, 3, 8), w), out);
      check().rejected("matmul", k -> k.matmul(out, x, uniform(arena, random, F32, 1, 5, 7)), out);
      check().rejected("matmul", k -> k.matmul(out, uniform(arena, random, F32, 1, 4, 8), w), out);
      check().rejected("matmul", k -> k.matmul(out, x, uniform(arena, random, F32, 1, 6, 8)), out);
      Tensor xb = uniform(arena, random, BF16, 1, 3, 8);
      Tensor wb = uniform(arena, random, BF16, 1, 5, 8);
      check().rejected("matmul", k -> k.matmul(out, xb, uniform(arena, random, BF16, 1, 5, 7)), out);
      check().rejected("matmul", k -> k.matmul(out, uniform(arena, random, BF16, 1, 4, 8), wb), out);
      check().rejected("matmul", k -> k.matmul(garbage(arena, BF16, 3, 5), xb, wb), out);
    }

    @Test
    default void rejectionsOfABf16ActivationSayWhatIsWrong() {
      var random = new Random(16);
      TensorArena arena = arena();
      Tensor out = garbage(arena, F32, 3, 5);
      Tensor xb = uniform(arena, random, BF16, 1, 3, 8);
      Tensor wf = uniform(arena, random, F32, 1, 5, 8);
      assertThatThrownBy(() -> kernels().matmul(out, xb, wf)).isInstanceOf(KernelException.class).hasMessage(
          "matmul: a BF16 x needs BF16 weights (a BF16 × BF16 dot product), got x BF16(3, 8) with w F32(5, 8)"
              + " [args: F32(3, 5), BF16(3, 8), F32(5, 8)]");
      Tensor wShort = uniform(arena, random, BF16, 1, 5, 7);
      assertThatThrownBy(() -> kernels().matmul(out, xb, wShort)).isInstanceOf(KernelException.class).hasMessage(
          "matmul: expected last dimension 7 in BF16(3, 8) [args: F32(3, 5), BF16(3, 8), BF16(5, 7)]");
      Tensor xRows = uniform(arena, random, BF16, 1, 4, 8);
      assertThatThrownBy(() -> kernels().matmul(out, xRows, uniform(arena, random, BF16, 1, 5, 8)))
          .isInstanceOf(KernelException.class)
          .hasMessage("matmul: expected 4 rows in F32(3, 5) [args: F32(3, 5), BF16(4, 8), BF16(5, 8)]");
      Tensor x8 = int8(arena, random, 3, 8);
      assertThatThrownBy(() -> kernels().matmul(out, x8, wf)).isInstanceOf(KernelException.class)
          .hasMessage("matmul: x must be F32 or BF16, got I8(3, 8) [args: F32(3, 5), I8(3, 8), F32(5, 8)]");
    }

    /** Σ_j |x[t][j]·w[o][j]|: the error scale of out[t][o]. */
    private static double[] sumsOfAbsoluteProducts(Tensor x, Tensor w) {
      int n = Math.toIntExact(x.numRows());
      int m = Math.toIntExact(w.numRows());
      int k = x.rowLength();
      float[] xs = x.toFloatArray();
      float[] ws = w.toFloatArray();
      double[] magnitude = new double[n * m];
      for (int t = 0; t < n; t++)
        for (int o = 0; o < m; o++)
          for (int j = 0; j < k; j++) magnitude[t * m + o] += Math.abs((double) xs[t * k + j] * ws[o * k + j]);
      return magnitude;
    }
  }

  interface QuantizeRows extends ContractBase {
    static Stream<Arguments> shapes() {
      return rowsByLengthFrom(F32, BF16);
    }

    static Call call() {
      return (k, out, in) -> k.quantizeRows(out[0], out[1], in[0]);
    }

    @ParameterizedTest(name = "x {2} ({0}, {1})")
    @MethodSource("shapes")
    default void matchesReferenceBitForBit(int n, int k, DType xType) {
      Tensor x = quantizeInput(arena(), new Random(seed(n, k, xType)), xType, n, k);
      check().exact("quantizeRows", call(), new Tensor[] {x}, garbage(arena(), I8, n, k), garbage(arena(), F32, n));
    }

    @Test
    default void rowsAreIndependentOfTheBatch() {
      Tensor x = quantizeInput(arena(), new Random(4), F32, 17, 64);
      check().rowsIndependent("quantizeRows", (k, out, from, to) -> k.quantizeRows(out[0], out[1], x.rows(from, to)),
          17, garbage(arena(), I8, 17, 64), garbage(arena(), F32, 17));
    }

    @Test
    default void acceptsRowStridedViews() {
      Tensor x = quantizeInput(arena(), new Random(5), BF16, 6, 67);
      check().viewsAgree("quantizeRows", call(), new Tensor[] {x},
          new Tensor[] {garbage(arena(), I8, 6, 67), garbage(arena(), F32, 6)});
    }

    @Test
    default void rejectsWrongDtypesAndShapes() {
      TensorArena arena = arena();
      Tensor q = garbage(arena, I8, 3, 8);
      Tensor scales = garbage(arena, F32, 3);
      Tensor x = quantizeInput(arena, new Random(6), F32, 3, 8);
      check().rejected("quantizeRows", k -> k.quantizeRows(garbage(arena, I32, 3, 8), scales, x), scales);
      check().rejected("quantizeRows", k -> k.quantizeRows(q, garbage(arena, F32, 4), x), q);
      check().rejected("quantizeRows", k -> k.quantizeRows(q, scales, quantizeInput(arena, new Random(7), F32, 3, 9)), q,
          scales);
    }

    /**
     * Rows of varied magnitude; with three or more rows, row 1 is all zeros and row 2 is 127 followed by
     * ±0.5, ±1.5, …: its inverse scale is exactly 1, so every q is a rint tie (ties go to even).
     */
    private static Tensor quantizeInput(TensorArena arena, Random random, DType dtype, int n, int k) {
      Tensor x = rowScaled(arena, random, dtype, n, k);
      if (n >= 3) {
        for (int j = 0; j < k; j++) {
          x.setFloat(k + j, 0f);
          x.setFloat(2L * k + j, j == 0 ? 127f : (j % 8) - 3.5f);
        }
      }
      return x;
    }
  }

  interface MatmulInt8 extends ContractBase {
    /** Rows: the GEMV, a pass or two of the few-row kernel (2 to 9), GEMM tiles with a partial last one (10, 17). */
    int[] INT8_ROWS = {1, 2, 3, 4, 5, 8, 9, 10, 17};

    static Stream<Arguments> shapes() {
      List<Arguments> cases = new ArrayList<>();
      for (int n : INT8_ROWS) for (int k : LENGTHS) for (int m : OUTPUTS) cases.add(Arguments.of(n, k, m));
      return cases.stream();
    }

    static Call call() {
      return (k, out, in) -> k.matmulInt8(out[0], in[0], in[1], in[2], in[3]);
    }

    /** Random INT8 with the last x row all 127 and the last w row all −127: sums past 2²⁴ must round alike. */
    private Tensor[] inputs(Random random, int n, int k, int m) {
      Tensor xq = int8(arena(), random, n, k);
      Tensor w = int8(arena(), random, m, k);
      for (int j = 0; j < k; j++) {
        xq.setByte((long) (n - 1) * k + j, (byte) 127);
        w.setByte((long) (m - 1) * k + j, (byte) -127);
      }
      return new Tensor[] {xq, uniform(arena(), random, F32, 0.1f, n), w, uniform(arena(), random, F32, 0.1f, m)};
    }

    @ParameterizedTest(name = "xq ({0}, {1}), w ({2}, {1})")
    @MethodSource("shapes")
    default void matchesReferenceBitForBit(int n, int k, int m) {
      check().exact("matmulInt8", call(), inputs(new Random(seed(n, k, m)), n, k, m), garbage(arena(), F32, n, m));
    }

    @Test
    default void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(8), 17, 64, 131);
      check().rowsIndependent("matmulInt8",
          (k, out, from, to) -> k.matmulInt8(out[0], in[0].rows(from, to), in[1].rows(from, to), in[2], in[3]), 17,
          garbage(arena(), F32, 17, 131));
    }

    @Test
    default void acceptsRowStridedViews() {
      check().viewsAgree("matmulInt8", call(), inputs(new Random(9), 5, 67, 19),
          new Tensor[] {garbage(arena(), F32, 5, 19)});
    }

    @Test
    default void rejectsWrongDtypesAndShapes() {
      TensorArena arena = arena();
      Tensor out = garbage(arena, F32, 3, 5);
      Tensor[] in = inputs(new Random(10), 3, 8, 5);
      var random = new Random(11);
      check().rejected("matmulInt8", k -> k.matmulInt8(out, uniform(arena, random, F32, 1, 3, 8), in[1], in[2], in[3]), out);
      check().rejected("matmulInt8", k -> k.matmulInt8(out, in[0], uniform(arena, random, F32, 1, 4), in[2], in[3]), out);
      check().rejected("matmulInt8", k -> k.matmulInt8(out, in[0], in[1], int8(arena, random, 5, 9), in[3]), out);
      check().rejected("matmulInt8", k -> k.matmulInt8(out, in[0], in[1], in[2], uniform(arena, random, F32, 1, 6)), out);
    }
  }

  interface DequantizeFp8 extends ContractBase {
    static Stream<Arguments> shapes() {
      List<Arguments> cases = new ArrayList<>();
      for (int m : OUTPUTS) for (int k : new int[] {1, 7, 130, 1021}) for (int block : new int[] {128, 4})
        for (DType out : List.of(F32, BF16)) cases.add(Arguments.of(m, k, block, out));
      return cases.stream();
    }

    static Call call(int block) {
      return (k, out, in) -> k.dequantizeFp8(out[0], in[0], in[1], block);
    }

    private Tensor[] inputs(Random random, int m, int k, int block) {
      int sm = (m + block - 1) / block;
      int sk = (k + block - 1) / block;
      return new Tensor[] {TestTensors.fp8(arena(), random, m, k), uniform(arena(), random, F32, 2, sm, sk)};
    }

    @ParameterizedTest(name = "w ({0}, {1}), block {2}, out {3}")
    @MethodSource("shapes")
    default void matchesReferenceBitForBit(int m, int k, int block, DType outType) {
      check().exact("dequantizeFp8", call(block), inputs(new Random(seed(m, k, block)), m, k, block),
          garbage(arena(), outType, m, k));
    }

    @Test
    default void rowsAreIndependentOfTheBatch() {
      int m = 23;
      int block = 4;
      Tensor[] in = inputs(new Random(12), m, 30, block);
      check().rowsIndependent("dequantizeFp8", (k, out, from, to) -> k.dequantizeFp8(out[0], in[0].rows(from, to),
          to - from == m ? in[1] : in[1].rows(from / block, from / block + 1), block), m, garbage(arena(), BF16, m, 30));
    }

    @Test
    default void acceptsRowStridedViews() {
      check().viewsAgree("dequantizeFp8", call(4), inputs(new Random(13), 11, 13, 4),
          new Tensor[] {garbage(arena(), BF16, 11, 13)});
    }

    @Test
    default void rejectsWrongDtypesAndShapes() {
      TensorArena arena = arena();
      Tensor out = garbage(arena, F32, 5, 8);
      Tensor[] in = inputs(new Random(14), 5, 8, 4);
      var random = new Random(15);
      check().rejected("dequantizeFp8", k -> k.dequantizeFp8(out, in[0], uniform(arena, random, F32, 1, 2, 3), 4), out);
      check().rejected("dequantizeFp8", k -> k.dequantizeFp8(out, in[0], in[1], 0), out);
      check().rejected("dequantizeFp8", k -> k.dequantizeFp8(out, int8(arena, random, 5, 8), in[1], 4), out);
      check().rejected("dequantizeFp8", k -> k.dequantizeFp8(garbage(arena, I8, 5, 8), in[0], in[1], 4), out);
    }
  }
}
