package io.moemesh.kernels;

import static io.moemesh.kernels.DType.BF16;
import static io.moemesh.kernels.DType.F32;
import static io.moemesh.kernels.DType.I32;
import static io.moemesh.kernels.DType.I8;
import static io.moemesh.kernels.TestTensors.absolute;
import static io.moemesh.kernels.TestTensors.assertBitEqual;
import static io.moemesh.kernels.TestTensors.assertClose;
import static io.moemesh.kernels.TestTensors.garbage;
import static io.moemesh.kernels.TestTensors.int8;
import static io.moemesh.kernels.TestTensors.rowScaled;
import static io.moemesh.kernels.TestTensors.uniform;

import io.moemesh.kernels.ContractChecks.Call;
import io.moemesh.kernels.SampleCalls.SampleCall;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * What every {@link Kernels} implementation promises, checked against {@link ReferenceKernels} (the spec).
 * A backend's test only says which kernels it runs:
 * <pre>
 * class NativeKernelsTest extends KernelsContract { Kernels kernels() { return nativeKernels; } }
 * </pre>
 * For every op, at odd and prime sizes (rows 1, 3, 17; row lengths 1, 7, 64, 1021; outputs 1, 5, 131):
 * <ul>
 *   <li>it matches the reference: the INT8 and conversion paths <b>exactly</b>, bit for bit (quantizeRows,
 *       matmulInt8, dequantizeFp8, gatherQuantize, scatterAdd, convert, add, moeGate's expert ids; NaN
 *       payloads aside), the float ops within {@link #tolerance} (below);
 *   <li>it is deterministic: every result is computed twice and the runs must agree bit for bit;
 *   <li>rows are independent: a batch equals each of its rows computed alone, bit for bit;
 *   <li>views work: offset and row-strided inputs and outputs give the bits of contiguous ones, nothing
 *       outside an output view is written, and no input is;
 *   <li>bad input (dtype, shape, out-of-range index, closed arena) throws a {@link KernelException} whose
 *       message starts with the op's name, and the outputs are left untouched.
 * </ul>
 *
 * <p><b>Tolerance.</b> A float result passes when {@code |actual − expected| ≤ tolerance(op) · magnitude},
 * magnitude being the op's natural error scale, which grows with the reduction length where there is one:
 * <ul>
 *   <li>matmul: Σ_j |x_j·w_j| of the element's dot product;
 *   <li>rmsNorm, siluMul, moeGate weights: |expected|;
 *   <li>rope: |x0| + |x1| of the rotated pair;
 *   <li>mlaDecode, attention: max |v| · (1 + scale · max_p Σ_i |q_i·k_p,i|) over the row's visible
 *       positions p (v = c_kv for mlaDecode) — the output is a convex combination of value rows, and a score
 *       error Δs (which grows with the score's Σ|terms|) scales a weight by e^Δs.
 * </ul>
 * Reordering a sum of n terms moves it by at most ≈ n·2⁻²⁴·Σ|terms| (6e-5 at n = 1021) and, on random data,
 * by far less (≈ 2⁻²⁴·√n times a typical partial sum: under 1e-6 of Σ|terms|). The default 1e-5 leaves room
 * for blocked or vectorized orders, FMA and a few ulps of exp/sqrt approximations (a 4-way, reversed-order
 * matmul stays under 3e-7; plain double softmax instead of AMLA under 5e-6 of max |c_kv|), yet still catches
 * F32 activations rounded to BF16 (≈ 2⁻⁹·Σ|terms|/√n, ≥ 5e-5 at n = 1021) or an unrefined {@code rsqrt14}
 * (≈ 6e-5). A backend may widen an op by overriding {@link #tolerance}; the exact ops have no tolerance.
 */
abstract class KernelsContract {

  /** The implementation under test. Called once per test; may return a shared instance. */
  abstract Kernels kernels();

  /** The relative tolerance of op's float results (see the class comment). */
  protected double tolerance(String op) {
    return 1e-5;
  }

  final Kernels reference = new ReferenceKernels();
  TensorArena arena;
  ContractChecks check;

  @BeforeEach
  void openArena() {
    arena = TensorArena.open();
    check = new ContractChecks(kernels(), reference, arena);
  }

  @AfterEach
  void closeArena() {
    arena.close();
  }

  @TestFactory
  Stream<DynamicTest> everyOpAcceptsItsSampleCall() {
    return SampleCalls.all(arena, arena).stream()
        .map(c -> DynamicTest.dynamicTest(c.op(), () -> c.call().accept(kernels())));
  }

  @TestFactory
  Stream<DynamicTest> everyOpRejectsATensorOfAClosedArena() {
    TensorArena inputs = TensorArena.open();
    List<SampleCall> calls = SampleCalls.all(arena, inputs);
    inputs.close();
    return calls.stream().map(c -> DynamicTest.dynamicTest(c.op(),
        () -> check.rejected(c.op(), c.call(), c.outputs().toArray(Tensor[]::new))));
  }

  void assertWithinTolerance(String op, Tensor actual, Tensor expected, double[] magnitude) {
    assertClose(actual, expected, magnitude, tolerance(op), op);
  }

  /** Runs op on the kernels and the reference and compares within tolerance · |expected|. */
  void assertElementwiseClose(String op, Call call, Tensor[] in, Tensor initialOut) {
    Tensor actual = check.actual(op, call, in, initialOut)[0];
    Tensor expected = check.expected(call, in, initialOut)[0];
    assertWithinTolerance(op, actual, expected, absolute(expected));
  }

  /** Row counts: a GEMV, a few, more than a vector register's worth. */
  static final int[] ROWS = {1, 3, 17};
  /** Row and reduction lengths: below, at and past a vector width, and a prime past many. */
  static final int[] LENGTHS = {1, 7, 64, 1021};
  /** Output columns of the matmuls. */
  static final int[] OUTPUTS = {1, 5, 131};

  static Stream<Arguments> rowsByLength() {
    List<Arguments> cases = new ArrayList<>();
    for (int n : ROWS) for (int k : LENGTHS) cases.add(Arguments.of(n, k));
    return cases.stream();
  }

  static Stream<Arguments> rowsByLengthFrom(DType... types) {
    List<Arguments> cases = new ArrayList<>();
    for (int n : ROWS) for (int k : LENGTHS) for (DType type : types) cases.add(Arguments.of(n, k, type));
    return cases.stream();
  }

  /** A seed that is the same on every run (enum hash codes are not, their names are). */
  static long seed(Object... params) {
    return List.of(params).toString().hashCode();
  }

  @Nested
  class Matmul {
    static Stream<Arguments> shapes() {
      List<Arguments> cases = new ArrayList<>();
      for (int n : ROWS) for (int k : LENGTHS) for (int m : OUTPUTS) for (DType w : List.of(F32, BF16))
        cases.add(Arguments.of(n, k, m, w));
      return cases.stream();
    }

    final Call call = (k, out, in) -> k.matmul(out[0], in[0], in[1]);

    @ParameterizedTest(name = "x ({0}, {1}), w {3} ({2}, {1})")
    @MethodSource("shapes")
    void matchesReferenceWithinToleranceOfSumOfAbsoluteProducts(int n, int k, int m, DType wType) {
      var random = new Random(seed(n, k, m, wType));
      Tensor x = uniform(arena, random, F32, 1, n, k);
      Tensor w = uniform(arena, random, wType, 1, m, k);
      Tensor[] in = {x, w};
      Tensor actual = check.actual("matmul", call, in, garbage(arena, F32, n, m))[0];
      Tensor expected = check.expected(call, in, garbage(arena, F32, n, m))[0];
      assertWithinTolerance("matmul", actual, expected, sumsOfAbsoluteProducts(x, w));
    }

    @Test
    void rowsAreIndependentOfTheBatch() {
      var random = new Random(1);
      Tensor x = uniform(arena, random, F32, 1, 17, 64);
      Tensor w = uniform(arena, random, BF16, 1, 131, 64);
      check.rowsIndependent("matmul", (k, out, from, to) -> k.matmul(out[0], x.rows(from, to), w), 17,
          garbage(arena, F32, 17, 131));
    }

    @Test
    void acceptsRowStridedViews() {
      var random = new Random(2);
      Tensor[] in = {uniform(arena, random, F32, 1, 5, 67), uniform(arena, random, BF16, 1, 19, 67)};
      check.viewsAgree("matmul", call, in, new Tensor[] {garbage(arena, F32, 5, 19)});
    }

    @Test
    void rejectsWrongDtypesAndShapes() {
      var random = new Random(3);
      Tensor out = garbage(arena, F32, 3, 5);
      Tensor x = uniform(arena, random, F32, 1, 3, 8);
      Tensor w = uniform(arena, random, F32, 1, 5, 8);
      check.rejected("matmul", k -> k.matmul(out, uniform(arena, random, BF16, 1, 3, 8), w), out);
      check.rejected("matmul", k -> k.matmul(out, x, uniform(arena, random, F32, 1, 5, 7)), out);
      check.rejected("matmul", k -> k.matmul(out, uniform(arena, random, F32, 1, 4, 8), w), out);
      check.rejected("matmul", k -> k.matmul(out, x, uniform(arena, random, F32, 1, 6, 8)), out);
    }
  }

  /** Σ_j |x[t][j]·w[o][j]|: the error scale of out[t][o]. */
  static double[] sumsOfAbsoluteProducts(Tensor x, Tensor w) {
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

  @Nested
  class QuantizeRows {
    static Stream<Arguments> shapes() {
      return rowsByLengthFrom(F32, BF16);
    }

    final Call call = (k, out, in) -> k.quantizeRows(out[0], out[1], in[0]);

    @ParameterizedTest(name = "x {2} ({0}, {1})")
    @MethodSource("shapes")
    void matchesReferenceBitForBit(int n, int k, DType xType) {
      Tensor x = quantizeInput(arena, new Random(seed(n, k, xType)), xType, n, k);
      check.exact("quantizeRows", call, new Tensor[] {x}, garbage(arena, I8, n, k), garbage(arena, F32, n));
    }

    @Test
    void rowsAreIndependentOfTheBatch() {
      Tensor x = quantizeInput(arena, new Random(4), F32, 17, 64);
      check.rowsIndependent("quantizeRows", (k, out, from, to) -> k.quantizeRows(out[0], out[1], x.rows(from, to)),
          17, garbage(arena, I8, 17, 64), garbage(arena, F32, 17));
    }

    @Test
    void acceptsRowStridedViews() {
      Tensor x = quantizeInput(arena, new Random(5), BF16, 6, 67);
      check.viewsAgree("quantizeRows", call, new Tensor[] {x}, new Tensor[] {garbage(arena, I8, 6, 67), garbage(arena, F32, 6)});
    }

    @Test
    void rejectsWrongDtypesAndShapes() {
      Tensor q = garbage(arena, I8, 3, 8);
      Tensor scales = garbage(arena, F32, 3);
      Tensor x = quantizeInput(arena, new Random(6), F32, 3, 8);
      check.rejected("quantizeRows", k -> k.quantizeRows(garbage(arena, I32, 3, 8), scales, x), scales);
      check.rejected("quantizeRows", k -> k.quantizeRows(q, garbage(arena, F32, 4), x), q);
      check.rejected("quantizeRows", k -> k.quantizeRows(q, scales, quantizeInput(arena, new Random(7), F32, 3, 9)), q, scales);
    }
  }

  /**
   * Rows of varied magnitude; with three or more rows, row 1 is all zeros and row 2 is 127 followed by
   * ±0.5, ±1.5, …: its inverse scale is exactly 1, so every q is a rint tie (ties go to even).
   */
  static Tensor quantizeInput(TensorArena arena, Random random, DType dtype, int n, int k) {
    Tensor x = rowScaled(arena, random, dtype, n, k);
    if (n >= 3) {
      for (int j = 0; j < k; j++) {
        x.setFloat(k + j, 0f);
        x.setFloat(2L * k + j, j == 0 ? 127f : (j % 8) - 3.5f);
      }
    }
    return x;
  }

  @Nested
  class MatmulInt8 {
    static Stream<Arguments> shapes() {
      List<Arguments> cases = new ArrayList<>();
      for (int n : ROWS) for (int k : LENGTHS) for (int m : OUTPUTS) cases.add(Arguments.of(n, k, m));
      return cases.stream();
    }

    final Call call = (k, out, in) -> k.matmulInt8(out[0], in[0], in[1], in[2], in[3]);

    /** Random INT8 with the last x row all 127 and the last w row all −127: sums past 2²⁴ must round alike. */
    Tensor[] inputs(Random random, int n, int k, int m) {
      Tensor xq = int8(arena, random, n, k);
      Tensor w = int8(arena, random, m, k);
      for (int j = 0; j < k; j++) {
        xq.setByte((long) (n - 1) * k + j, (byte) 127);
        w.setByte((long) (m - 1) * k + j, (byte) -127);
      }
      return new Tensor[] {xq, uniform(arena, random, F32, 0.1f, n), w, uniform(arena, random, F32, 0.1f, m)};
    }

    @ParameterizedTest(name = "xq ({0}, {1}), w ({2}, {1})")
    @MethodSource("shapes")
    void matchesReferenceBitForBit(int n, int k, int m) {
      check.exact("matmulInt8", call, inputs(new Random(seed(n, k, m)), n, k, m), garbage(arena, F32, n, m));
    }

    @Test
    void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(8), 17, 64, 131);
      check.rowsIndependent("matmulInt8",
          (k, out, from, to) -> k.matmulInt8(out[0], in[0].rows(from, to), in[1].rows(from, to), in[2], in[3]), 17,
          garbage(arena, F32, 17, 131));
    }

    @Test
    void acceptsRowStridedViews() {
      check.viewsAgree("matmulInt8", call, inputs(new Random(9), 5, 67, 19), new Tensor[] {garbage(arena, F32, 5, 19)});
    }

    @Test
    void rejectsWrongDtypesAndShapes() {
      Tensor out = garbage(arena, F32, 3, 5);
      Tensor[] in = inputs(new Random(10), 3, 8, 5);
      var random = new Random(11);
      check.rejected("matmulInt8", k -> k.matmulInt8(out, uniform(arena, random, F32, 1, 3, 8), in[1], in[2], in[3]), out);
      check.rejected("matmulInt8", k -> k.matmulInt8(out, in[0], uniform(arena, random, F32, 1, 4), in[2], in[3]), out);
      check.rejected("matmulInt8", k -> k.matmulInt8(out, in[0], in[1], int8(arena, random, 5, 9), in[3]), out);
      check.rejected("matmulInt8", k -> k.matmulInt8(out, in[0], in[1], in[2], uniform(arena, random, F32, 1, 6)), out);
    }
  }

  @Nested
  class DequantizeFp8 {
    static Stream<Arguments> shapes() {
      List<Arguments> cases = new ArrayList<>();
      for (int m : OUTPUTS) for (int k : new int[] {1, 7, 130, 1021}) for (int block : new int[] {128, 4})
        for (DType out : List.of(F32, BF16)) cases.add(Arguments.of(m, k, block, out));
      return cases.stream();
    }

    static Call call(int block) {
      return (k, out, in) -> k.dequantizeFp8(out[0], in[0], in[1], block);
    }

    Tensor[] inputs(Random random, int m, int k, int block) {
      int sm = (m + block - 1) / block;
      int sk = (k + block - 1) / block;
      return new Tensor[] {TestTensors.fp8(arena, random, m, k), uniform(arena, random, F32, 2, sm, sk)};
    }

    @ParameterizedTest(name = "w ({0}, {1}), block {2}, out {3}")
    @MethodSource("shapes")
    void matchesReferenceBitForBit(int m, int k, int block, DType outType) {
      check.exact("dequantizeFp8", call(block), inputs(new Random(seed(m, k, block)), m, k, block),
          garbage(arena, outType, m, k));
    }

    @Test
    void rowsAreIndependentOfTheBatch() {
      int m = 23;
      int block = 4;
      Tensor[] in = inputs(new Random(12), m, 30, block);
      check.rowsIndependent("dequantizeFp8", (k, out, from, to) -> k.dequantizeFp8(out[0], in[0].rows(from, to),
          to - from == m ? in[1] : in[1].rows(from / block, from / block + 1), block), m, garbage(arena, BF16, m, 30));
    }

    @Test
    void acceptsRowStridedViews() {
      check.viewsAgree("dequantizeFp8", call(4), inputs(new Random(13), 11, 13, 4), new Tensor[] {garbage(arena, BF16, 11, 13)});
    }

    @Test
    void rejectsWrongDtypesAndShapes() {
      Tensor out = garbage(arena, F32, 5, 8);
      Tensor[] in = inputs(new Random(14), 5, 8, 4);
      var random = new Random(15);
      check.rejected("dequantizeFp8", k -> k.dequantizeFp8(out, in[0], uniform(arena, random, F32, 1, 2, 3), 4), out);
      check.rejected("dequantizeFp8", k -> k.dequantizeFp8(out, in[0], in[1], 0), out);
      check.rejected("dequantizeFp8", k -> k.dequantizeFp8(out, int8(arena, random, 5, 8), in[1], 4), out);
      check.rejected("dequantizeFp8", k -> k.dequantizeFp8(garbage(arena, I8, 5, 8), in[0], in[1], 4), out);
    }
  }

  @Nested
  class RmsNorm {
    static Stream<Arguments> shapes() {
      return rowsByLength();
    }

    final Call call = (k, out, in) -> k.rmsNorm(out[0], in[0], in[1], 1e-6f);

    Tensor[] inputs(Random random, int n, int d) {
      return new Tensor[] {rowScaled(arena, random, F32, n, d), uniform(arena, random, F32, 2, d)};
    }

    @ParameterizedTest(name = "x ({0}, {1})")
    @MethodSource("shapes")
    void matchesReferenceWithinToleranceOfResult(int n, int d) {
      assertElementwiseClose("rmsNorm", call, inputs(new Random(seed(n, d)), n, d), garbage(arena, F32, n, d));
    }

    @Test
    void inPlaceEqualsOutOfPlace() {
      Tensor[] in = inputs(new Random(16), 5, 67);
      Tensor apart = check.actual("rmsNorm", call, in, garbage(arena, F32, 5, 67))[0];
      Tensor inPlace = check.actual("rmsNorm", (k, out, none) -> k.rmsNorm(out[0], out[0], in[1], 1e-6f), null, in[0])[0];
      assertBitEqual(inPlace, apart, "rmsNorm in place");
    }

    @Test
    void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(17), 17, 64);
      check.rowsIndependent("rmsNorm", (k, out, from, to) -> k.rmsNorm(out[0], in[0].rows(from, to), in[1], 1e-6f), 17,
          garbage(arena, F32, 17, 64));
    }

    @Test
    void acceptsRowStridedViews() {
      check.viewsAgree("rmsNorm", call, inputs(new Random(18), 5, 67), new Tensor[] {garbage(arena, F32, 5, 67)});
    }

    @Test
    void rejectsWrongDtypesShapesAndEps() {
      Tensor out = garbage(arena, F32, 3, 8);
      Tensor[] in = inputs(new Random(19), 3, 8);
      var random = new Random(20);
      check.rejected("rmsNorm", k -> k.rmsNorm(out, in[0], uniform(arena, random, F32, 1, 7), 1e-6f), out);
      check.rejected("rmsNorm", k -> k.rmsNorm(out, uniform(arena, random, BF16, 1, 3, 8), in[1], 1e-6f), out);
      check.rejected("rmsNorm", k -> k.rmsNorm(out, in[0], in[1], 0f), out);
    }
  }

  @Nested
  class Rope {
    static final int MAX_POSITIONS = 1000;

    static Stream<Arguments> shapes() {
      List<Arguments> cases = new ArrayList<>();
      for (int n : ROWS) for (int heads : new int[] {0, 1, 3}) for (int d : new int[] {2, 8, 64})
        cases.add(Arguments.of(n, heads, d));
      return cases.stream();
    }

    final Call call = (k, out, in) -> k.rope(out[0], in[0], new RopeTable(in[1], in[2]));

    /** x (n, d) when heads = 0, else (n, heads, d); positions; the cos and sin tables (DeepSeek's base 10000). */
    Tensor[] inputs(Random random, int n, int heads, int d) {
      float[] freqs = new float[d / 2];
      for (int i = 0; i < freqs.length; i++) freqs[i] = (float) Math.pow(10000, -2.0 * i / d);
      RopeTable table = RopeTable.of(arena, freqs, MAX_POSITIONS);
      Tensor x = heads == 0 ? uniform(arena, random, F32, 4, n, d) : uniform(arena, random, F32, 4, n, heads, d);
      return new Tensor[] {x, TestTensors.ints(arena, random, 0, MAX_POSITIONS, n), table.cos(), table.sin()};
    }

    @ParameterizedTest(name = "n {0}, heads {1}, d {2}")
    @MethodSource("shapes")
    void matchesReferenceWithinToleranceOfPairMagnitude(int n, int heads, int d) {
      Tensor[] xAndTable = inputs(new Random(seed(n, heads, d)), n, heads, d);
      Tensor x = xAndTable[0];
      Tensor[] in = {xAndTable[1], xAndTable[2], xAndTable[3]};
      Tensor actual = check.actual("rope", call, in, x)[0];
      Tensor expected = check.expected(call, in, x)[0];
      float[] v = x.toFloatArray();
      double[] magnitude = new double[v.length];
      for (int i = 0; i < v.length; i++) magnitude[i] = Math.abs(v[i & ~1]) + Math.abs(v[i | 1]);
      assertWithinTolerance("rope", actual, expected, magnitude);
    }

    @Test
    void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(21), 17, 3, 64);
      RopeTable table = new RopeTable(in[2], in[3]);
      check.rowsIndependent("rope", (k, out, from, to) -> k.rope(out[0], in[1].rows(from, to), table), 17, in[0]);
    }

    @Test
    void acceptsRowStridedViews() {
      Tensor[] in = inputs(new Random(22), 5, 3, 16);
      check.viewsAgree("rope", call, new Tensor[] {in[1], in[2], in[3]}, new Tensor[] {in[0]}, in[2], in[3]);
    }

    @Test
    void rejectsPositionsOutsideTheTableWritingNothing() {
      Tensor[] in = inputs(new Random(23), 3, 2, 8);
      RopeTable table = new RopeTable(in[2], in[3]);
      Tensor x = in[0];
      for (int bad : new int[] {-1, MAX_POSITIONS}) {
        Tensor positions = arena.ofInts(new int[] {0, 5, bad}, 3);
        check.rejected("rope", k -> k.rope(x, positions, table), x);
      }
      check.rejected("rope", k -> k.rope(x, arena.ofInts(new int[] {0, 1}, 2), table), x);
      Tensor wide = uniform(arena, new Random(24), F32, 1, 3, 2, 10);
      check.rejected("rope", k -> k.rope(wide, in[1], table), wide);
      // The tables must be contiguous (the C side takes them without a row stride).
      RopeTable strided = new RopeTable(TestTensors.strided(arena, in[2]).view(), TestTensors.strided(arena, in[3]).view());
      check.rejected("rope", k -> k.rope(x, in[1], strided), x);
    }
  }

  @Nested
  class SiluMul {
    static Stream<Arguments> shapes() {
      return rowsByLength();
    }

    final Call call = (k, out, in) -> k.siluMul(out[0], in[0], in[1]);

    /** gate mostly in ±20, every 7th element ±100 (e^100 overflows F32); up in ±2. */
    Tensor[] inputs(Random random, int n, int d) {
      Tensor gate = uniform(arena, random, F32, 20, n, d);
      for (long i = 0; i < gate.numElements(); i += 7) gate.setFloat(i, random.nextBoolean() ? 100f : -100f);
      return new Tensor[] {gate, uniform(arena, random, F32, 2, n, d)};
    }

    @ParameterizedTest(name = "({0}, {1})")
    @MethodSource("shapes")
    void matchesReferenceWithinToleranceOfResult(int n, int d) {
      assertElementwiseClose("siluMul", call, inputs(new Random(seed(n, d)), n, d), garbage(arena, F32, n, d));
    }

    @Test
    void inPlaceEqualsOutOfPlace() {
      Tensor[] in = inputs(new Random(25), 5, 67);
      Tensor apart = check.actual("siluMul", call, in, garbage(arena, F32, 5, 67))[0];
      Tensor intoGate = check.actual("siluMul", (k, out, none) -> k.siluMul(out[0], out[0], in[1]), null, in[0])[0];
      Tensor intoUp = check.actual("siluMul", (k, out, none) -> k.siluMul(out[0], in[0], out[0]), null, in[1])[0];
      assertBitEqual(intoGate, apart, "siluMul into gate");
      assertBitEqual(intoUp, apart, "siluMul into up");
    }

    @Test
    void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(26), 17, 64);
      check.rowsIndependent("siluMul", (k, out, from, to) -> k.siluMul(out[0], in[0].rows(from, to), in[1].rows(from, to)),
          17, garbage(arena, F32, 17, 64));
    }

    @Test
    void acceptsRowStridedViews() {
      check.viewsAgree("siluMul", call, inputs(new Random(27), 5, 67), new Tensor[] {garbage(arena, F32, 5, 67)});
    }

    @Test
    void rejectsWrongDtypesAndShapes() {
      Tensor out = garbage(arena, F32, 3, 8);
      Tensor[] in = inputs(new Random(28), 3, 8);
      var random = new Random(29);
      check.rejected("siluMul", k -> k.siluMul(out, in[0], uniform(arena, random, F32, 1, 3, 9)), out);
      check.rejected("siluMul", k -> k.siluMul(out, uniform(arena, random, BF16, 1, 3, 8), in[1]), out);
    }
  }

  @Nested
  class MoeGate {
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

    void compare(Tensor logits, Tensor bias, GateParams params) {
      Tensor[] in = bias == null ? new Tensor[] {logits} : new Tensor[] {logits, bias};
      int n = Math.toIntExact(logits.numRows());
      Tensor[] outs = {garbage(arena, I32, n, params.topk()), garbage(arena, F32, n, params.topk())};
      Tensor[] actual = check.actual("moeGate", call(params), in, outs);
      Tensor[] expected = check.expected(call(params), in, outs);
      assertBitEqual(actual[0], expected[0], "moeGate expert ids");
      assertWithinTolerance("moeGate", actual[1], expected[1], absolute(expected[1]));
    }

    @ParameterizedTest(name = "n {0}, {1} experts, {2}, bias {3}")
    @MethodSource("gates")
    void choosesTheReferenceExpertsWithWeightsWithinTolerance(int n, int experts, GateParams params, boolean withBias) {
      var random = new Random(seed(n, experts, params, withBias));
      Tensor logits = uniform(arena, random, F32, 4, n, experts);
      compare(logits, withBias ? uniform(arena, random, F32, 0.5f, experts) : null, params);
    }

    @Test
    void breaksTiesAsTheReferenceDoes() {
      var random = new Random(30);
      Tensor logits = arena.allocate(F32, 17, 32);
      for (long i = 0; i < logits.numElements(); i++) logits.setFloat(i, random.nextInt(3) - 1);
      compare(logits, null, new GateParams(6, 4, 2, true, 2.5f));
      compare(logits, arena.allocate(F32, 32), new GateParams(6, 8, 3, false, 1f));
    }

    @Test
    void rowsAreIndependentOfTheBatch() {
      var random = new Random(31);
      Tensor logits = uniform(arena, random, F32, 4, 17, 256);
      Tensor bias = uniform(arena, random, F32, 0.5f, 256);
      var params = new GateParams(8, 8, 4, true, 2.5f);
      check.rowsIndependent("moeGate", (k, out, from, to) -> k.moeGate(out[0], out[1], logits.rows(from, to), bias, params),
          17, garbage(arena, I32, 17, 8), garbage(arena, F32, 17, 8));
    }

    @Test
    void acceptsRowStridedLogitsAndOffsetOutputs() {
      var random = new Random(32);
      Tensor[] outs = {garbage(arena, I32, 5, 8), garbage(arena, F32, 5, 8)};
      Tensor[] in = {uniform(arena, random, F32, 4, 5, 256), uniform(arena, random, F32, 0.5f, 256)};
      check.viewsAgree("moeGate", call(new GateParams(8, 8, 4, true, 2.5f)), in, outs, outs[0], outs[1]);
    }

    @Test
    void rejectsWrongDtypesShapesAndGates() {
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

  @Nested
  class MlaDecode {
    /** (nq, heads, kvLoraRank, ropeDim, pageSize, maxPages, pages dtype): tiny, DeepSeek's dims, odd ones. */
    static Stream<Arguments> shapes() {
      return Stream.of(
          Arguments.of(1, 1, 16, 8, 1, 3, F32),
          Arguments.of(3, 4, 64, 16, 16, 4, BF16),
          Arguments.of(3, 3, 512, 64, 16, 3, BF16),
          Arguments.of(5, 2, 32, 8, 7, 5, F32),
          Arguments.of(4, 2, 131, 7, 5, 4, BF16));
    }

    /** Attention on in = {qLatent, qRope, pages, blockTable, contextLens}. */
    static Call call(float softmaxScale) {
      return (k, out, in) -> k.mlaDecode(out[0], in[0], in[1], new PagedLatentKv(in[2], in[3], in[4]), softmaxScale);
    }

    /** DeepSeek's 1/√(qk head dim) times {@code sharpness}: large values move the running max often and far. */
    static float scale(int rank, int rope, float sharpness) {
      return sharpness / (float) Math.sqrt(rank + rope);
    }

    /**
     * qLatent, qRope, pages, blockTable, contextLens. Row 0 sees one position, row 1 ends in a partly filled
     * page, row 2 fills all its pages, the rest are random.
     */
    Tensor[] inputs(Random random, int nq, int heads, int rank, int rope, int pageSize, int maxPages, DType pagesType) {
      int numPages = nq * maxPages / 2 + 1;
      int capacity = maxPages * pageSize;
      int[] lens = new int[nq];
      for (int t = 0; t < nq; t++) {
        lens[t] = switch (t) {
          case 0 -> 1;
          case 1 -> Math.max(1, capacity - pageSize + 1);
          case 2 -> capacity;
          default -> 1 + random.nextInt(capacity);
        };
      }
      return new Tensor[] {
          uniform(arena, random, F32, 1, nq, heads, rank), uniform(arena, random, F32, 1, nq, heads, rope),
          uniform(arena, random, pagesType, 1, numPages, pageSize, rank + rope),
          TestTensors.ints(arena, random, 0, numPages, nq, maxPages), arena.ofInts(lens, nq)};
    }

    /** Per output row (t, h), {@link Attention#errorScale}: see the class comment. */
    static double[] attentionMagnitude(Tensor[] in, float softmaxScale) {
      var problem = new Attention(in[0], in[1], in[2], in[3], in[4]);
      int nq = in[0].dim(0);
      int heads = in[0].dim(1);
      int rank = in[0].dim(2);
      double[] magnitude = new double[nq * heads * rank];
      for (int t = 0; t < nq; t++)
        for (int h = 0; h < heads; h++)
          java.util.Arrays.fill(magnitude, (t * heads + h) * rank, (t * heads + h + 1) * rank,
              problem.errorScale(t, h, softmaxScale));
      return magnitude;
    }

    @ParameterizedTest(name = "nq {0}, heads {1}, rank {2}+{3}, pages of {4} × {5} {6}")
    @MethodSource("shapes")
    void matchesReferenceWithinToleranceOfLatentAndScoreMagnitude(int nq, int heads, int rank, int rope, int pageSize,
        int maxPages, DType pagesType) {
      for (float sharpness : new float[] {1, 30}) {
        var random = new Random(seed(nq, heads, rank, rope, pageSize, sharpness));
        Tensor[] in = inputs(random, nq, heads, rank, rope, pageSize, maxPages, pagesType);
        float scale = scale(rank, rope, sharpness);
        Tensor actual = check.actual("mlaDecode", call(scale), in, garbage(arena, F32, nq, heads, rank))[0];
        Tensor expected = check.expected(call(scale), in, garbage(arena, F32, nq, heads, rank))[0];
        assertWithinTolerance("mlaDecode", actual, expected, attentionMagnitude(in, scale));
      }
    }

    @Test
    void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(34), 6, 4, 64, 16, 8, 4, BF16);
      check.rowsIndependent("mlaDecode", (k, out, from, to) -> k.mlaDecode(out[0], in[0].rows(from, to),
          in[1].rows(from, to), new PagedLatentKv(in[2], in[3].rows(from, to), in[4].rows(from, to)), 0.125f),
          6, garbage(arena, F32, 6, 4, 64));
    }

    @Test
    void acceptsRowStridedQueriesOutputAndBlockTable() {
      Tensor[] in = inputs(new Random(35), 3, 4, 64, 16, 8, 4, BF16);
      check.viewsAgree("mlaDecode", call(0.125f), in, new Tensor[] {garbage(arena, F32, 3, 4, 64)}, in[2]);
    }

    @Test
    void rejectsPageIdsAndContextLengthsOutOfRangeWritingNothing() {
      Tensor[] in = inputs(new Random(36), 3, 2, 16, 8, 4, 3, F32);
      Tensor out = garbage(arena, F32, 3, 2, 16);
      int numPages = in[2].dim(0);
      for (int badPage : new int[] {-1, numPages}) {
        Tensor blockTable = copyOf(in[3]);
        blockTable.setInt(2L * 3, badPage); // row 2's first page: always used
        check.rejected("mlaDecode", k -> k.mlaDecode(out, in[0], in[1], new PagedLatentKv(in[2], blockTable, in[4]), 0.5f), out);
      }
      for (int badLength : new int[] {0, -3, 3 * 4 + 1}) {
        Tensor lens = arena.ofInts(new int[] {1, 2, badLength}, 3);
        check.rejected("mlaDecode", k -> k.mlaDecode(out, in[0], in[1], new PagedLatentKv(in[2], in[3], lens), 0.5f), out);
      }
      Tensor wideRope = uniform(arena, new Random(37), F32, 1, 3, 2, 9);
      check.rejected("mlaDecode", k -> k.mlaDecode(out, in[0], wideRope, new PagedLatentKv(in[2], in[3], in[4]), 0.5f), out);
    }

    private Tensor copyOf(Tensor t) {
      return TestTensors.copy(arena, t);
    }
  }

  @Nested
  class CausalAttention {
    /** (nq, nk, heads, dqk, dv): one token, a short prompt, DeepSeek's head dims, a chunk after a prefix. */
    static Stream<Arguments> shapes() {
      return Stream.of(
          Arguments.of(1, 1, 1, 7, 5),
          Arguments.of(3, 3, 2, 64, 64),
          Arguments.of(17, 17, 3, 192, 128),
          Arguments.of(5, 12, 2, 131, 7));
    }

    static Call call(float softmaxScale) {
      return (k, out, in) -> k.attention(out[0], in[0], in[1], in[2], in[3], softmaxScale);
    }

    /** q, k, v and causal lengths: the nq queries are the last nq of the nk keys (a chunk after a prefix). */
    Tensor[] inputs(Random random, int nq, int nk, int heads, int dqk, int dv) {
      int[] lens = new int[nq];
      for (int t = 0; t < nq; t++) lens[t] = nk - nq + t + 1;
      return new Tensor[] {uniform(arena, random, F32, 1, nq, heads, dqk), uniform(arena, random, F32, 1, nk, heads, dqk),
          uniform(arena, random, F32, 1, nk, heads, dv), arena.ofInts(lens, nq)};
    }

    /** max |v| · (1 + scale · max_j Σ_i |q_i·k_j,i|) per output row, as for mlaDecode (class comment). */
    static double[] magnitude(Tensor[] in, float scale) {
      int nq = in[0].dim(0);
      int heads = in[0].dim(1);
      int dqk = in[0].dim(2);
      int dv = in[2].dim(2);
      double[] m = new double[nq * heads * dv];
      for (int t = 0; t < nq; t++) {
        for (int h = 0; h < heads; h++) {
          double largestValue = 0;
          double largestScore = 0;
          for (int j = 0; j < in[3].getInt(t); j++) {
            double sum = 0;
            for (int i = 0; i < dqk; i++) {
              sum += Math.abs((double) in[0].getFloat(((long) t * heads + h) * dqk + i)
                  * in[1].getFloat(((long) j * heads + h) * dqk + i));
            }
            largestScore = Math.max(largestScore, Math.abs(scale) * sum);
            for (int i = 0; i < dv; i++)
              largestValue = Math.max(largestValue, Math.abs(in[2].getFloat(((long) j * heads + h) * dv + i)));
          }
          java.util.Arrays.fill(m, (t * heads + h) * dv, (t * heads + h + 1) * dv, largestValue * (1 + largestScore));
        }
      }
      return m;
    }

    @ParameterizedTest(name = "nq {0}, nk {1}, heads {2}, dqk {3}, dv {4}")
    @MethodSource("shapes")
    void matchesReferenceWithinToleranceOfValueAndScoreMagnitude(int nq, int nk, int heads, int dqk, int dv) {
      for (float sharpness : new float[] {1, 30}) {
        Tensor[] in = inputs(new Random(seed(nq, nk, heads, dqk, dv, sharpness)), nq, nk, heads, dqk, dv);
        float scale = sharpness / (float) Math.sqrt(dqk);
        Tensor actual = check.actual("attention", call(scale), in, garbage(arena, F32, nq, heads, dv))[0];
        Tensor expected = check.expected(call(scale), in, garbage(arena, F32, nq, heads, dv))[0];
        assertWithinTolerance("attention", actual, expected, magnitude(in, scale));
      }
    }

    @Test
    void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(47), 9, 9, 2, 64, 32);
      check.rowsIndependent("attention",
          (k, out, from, to) -> k.attention(out[0], in[0].rows(from, to), in[1], in[2], in[3].rows(from, to), 0.125f), 9,
          garbage(arena, F32, 9, 2, 32));
    }

    @Test
    void acceptsRowStridedViews() {
      Tensor[] in = inputs(new Random(48), 4, 6, 2, 24, 16);
      check.viewsAgree("attention", call(0.2f), in, new Tensor[] {garbage(arena, F32, 4, 2, 16)});
    }

    @Test
    void rejectsContextLengthsOutOfRangeWritingNothing() {
      Tensor[] in = inputs(new Random(49), 3, 5, 2, 8, 4);
      Tensor out = garbage(arena, F32, 3, 2, 4);
      for (int bad : new int[] {0, 6}) {
        Tensor lens = arena.ofInts(new int[] {1, 2, bad}, 3);
        check.rejected("attention", k -> k.attention(out, in[0], in[1], in[2], lens, 0.5f), out);
      }
      Tensor threeHeads = uniform(arena, new Random(50), F32, 1, 5, 3, 8);
      check.rejected("attention", k -> k.attention(out, in[0], threeHeads, in[2], in[3], 0.5f), out);
      check.rejected("attention", k -> k.attention(out, in[0], in[1], in[2], arena.ofInts(new int[] {1, 2}, 2), 0.5f), out);
    }
  }

  @Nested
  class Add {
    static Stream<Arguments> shapes() {
      return rowsByLength();
    }

    final Call call = (k, out, in) -> k.add(out[0], in[0], in[1]);

    Tensor[] inputs(Random random, int n, int d) {
      return new Tensor[] {rowScaled(arena, random, F32, n, d), rowScaled(arena, random, F32, n, d)};
    }

    @ParameterizedTest(name = "({0}, {1})")
    @MethodSource("shapes")
    void matchesReferenceBitForBit(int n, int d) {
      check.exact("add", call, inputs(new Random(seed(n, d)), n, d), garbage(arena, F32, n, d));
    }

    @Test
    void inPlaceEqualsOutOfPlace() {
      Tensor[] in = inputs(new Random(51), 5, 67);
      Tensor apart = check.actual("add", call, in, garbage(arena, F32, 5, 67))[0];
      Tensor intoA = check.actual("add", (k, out, none) -> k.add(out[0], out[0], in[1]), null, in[0])[0];
      Tensor intoB = check.actual("add", (k, out, none) -> k.add(out[0], in[0], out[0]), null, in[1])[0];
      assertBitEqual(intoA, apart, "add into a");
      assertBitEqual(intoB, apart, "add into b");
    }

    @Test
    void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(52), 17, 64);
      check.rowsIndependent("add", (k, out, from, to) -> k.add(out[0], in[0].rows(from, to), in[1].rows(from, to)), 17,
          garbage(arena, F32, 17, 64));
    }

    @Test
    void acceptsRowStridedViews() {
      check.viewsAgree("add", call, inputs(new Random(53), 5, 67), new Tensor[] {garbage(arena, F32, 5, 67)});
    }

    @Test
    void rejectsWrongDtypesAndShapes() {
      var random = new Random(54);
      Tensor out = garbage(arena, F32, 3, 8);
      Tensor[] in = inputs(random, 3, 8);
      check.rejected("add", k -> k.add(out, in[0], uniform(arena, random, F32, 1, 3, 9)), out);
      check.rejected("add", k -> k.add(out, uniform(arena, random, BF16, 1, 3, 8), in[1]), out);
    }
  }

  @Nested
  class GatherQuantize {
    static Stream<Arguments> shapes() {
      return rowsByLength();
    }

    final Call call = (k, out, in) -> k.gatherQuantize(out[0], out[1], in[0], in[1]);

    /** x: 5 rows of varied magnitude (row 3 all zeros); rows: r ids in [0, 5), repeats likely. */
    Tensor[] inputs(Random random, int r, int d) {
      Tensor x = rowScaled(arena, random, F32, 5, d);
      for (int j = 0; j < d; j++) x.setFloat(3L * d + j, 0f);
      return new Tensor[] {x, TestTensors.ints(arena, random, 0, 5, r)};
    }

    @ParameterizedTest(name = "{0} rows of length {1}")
    @MethodSource("shapes")
    void matchesReferenceBitForBit(int r, int d) {
      check.exact("gatherQuantize", call, inputs(new Random(seed(r, d)), r, d), garbage(arena, I8, r, d),
          garbage(arena, F32, r));
    }

    @Test
    void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(38), 17, 64);
      check.rowsIndependent("gatherQuantize",
          (k, out, from, to) -> k.gatherQuantize(out[0], out[1], in[0], in[1].rows(from, to)), 17,
          garbage(arena, I8, 17, 64), garbage(arena, F32, 17));
    }

    @Test
    void acceptsRowStridedViews() {
      check.viewsAgree("gatherQuantize", call, inputs(new Random(39), 6, 67),
          new Tensor[] {garbage(arena, I8, 6, 67), garbage(arena, F32, 6)});
    }

    @Test
    void rejectsRowIdsOutOfRangeWritingNothing() {
      Tensor q = garbage(arena, I8, 3, 8);
      Tensor scales = garbage(arena, F32, 3);
      Tensor x = inputs(new Random(40), 3, 8)[0];
      for (int bad : new int[] {-1, 5}) {
        Tensor rows = arena.ofInts(new int[] {0, 4, bad}, 3);
        check.rejected("gatherQuantize", k -> k.gatherQuantize(q, scales, x, rows), q, scales);
      }
      check.rejected("gatherQuantize", k -> k.gatherQuantize(q, scales, x, arena.ofInts(new int[] {0, 1}, 2)), q, scales);
      Tensor stridedRows = arena.ofInts(new int[] {0, 9, 1, 9, 2, 9}, 3, 2).cols(0, 1); // (3, 1) with row stride 2
      check.rejected("gatherQuantize", k -> k.gatherQuantize(q, scales, x, stridedRows), q, scales);
    }
  }

  @Nested
  class ScatterAdd {
    static Stream<Arguments> shapes() {
      return rowsByLength();
    }

    final Call call = (k, out, in) -> k.scatterAdd(out[0], in[0], in[1], in[2]);

    /** y (r, d), rows: r ids in [0, 5) (repeats likely), weights (r). */
    Tensor[] inputs(Random random, int r, int d) {
      return new Tensor[] {uniform(arena, random, F32, 3, r, d), TestTensors.ints(arena, random, 0, 5, r),
          uniform(arena, random, F32, 1, r)};
    }

    @ParameterizedTest(name = "{0} rows of length {1}")
    @MethodSource("shapes")
    void matchesReferenceBitForBit(int r, int d) {
      var random = new Random(seed(r, d));
      check.exact("scatterAdd", call, inputs(random, r, d), uniform(arena, random, F32, 10, 5, d));
    }

    @Test
    void addsInRowOrderAsIfOneRowAtATime() {
      var random = new Random(41);
      Tensor[] in = inputs(random, 17, 64);
      Tensor initial = uniform(arena, random, F32, 10, 5, 64);
      Tensor batch = check.actual("scatterAdd", call, in, initial)[0];
      Tensor oneByOne = TestTensors.copy(arena, initial);
      for (int i = 0; i < 17; i++)
        kernels().scatterAdd(oneByOne, in[0].rows(i, i + 1), in[1].rows(i, i + 1), in[2].rows(i, i + 1));
      assertBitEqual(batch, oneByOne, "scatterAdd batch vs one row at a time");
    }

    @Test
    void acceptsRowStridedViews() {
      var random = new Random(42);
      check.viewsAgree("scatterAdd", call, inputs(random, 6, 67), new Tensor[] {uniform(arena, random, F32, 10, 5, 67)});
    }

    @Test
    void rejectsRowIdsOutOfRangeWritingNothing() {
      var random = new Random(43);
      Tensor out = uniform(arena, random, F32, 1, 5, 8);
      Tensor[] in = inputs(random, 3, 8);
      for (int bad : new int[] {-1, 5}) {
        Tensor rows = arena.ofInts(new int[] {0, 4, bad}, 3);
        check.rejected("scatterAdd", k -> k.scatterAdd(out, in[0], rows, in[2]), out);
      }
      check.rejected("scatterAdd", k -> k.scatterAdd(out, in[0], in[1], uniform(arena, random, F32, 1, 2)), out);
      check.rejected("scatterAdd", k -> k.scatterAdd(out, uniform(arena, random, F32, 1, 3, 9), in[1], in[2]), out);
    }
  }

  @Nested
  class Convert {
    static Stream<Arguments> shapes() {
      return rowsByLengthFrom(F32, BF16);
    }

    final Call call = (k, out, in) -> k.convert(out[0], in[0]);

    /** Every bit pattern equally likely: NaNs, infinities, subnormals, ties and signed zeros all appear. */
    static Tensor randomBits(TensorArena arena, Random random, DType dtype, int n, int d) {
      Tensor t = arena.allocate(dtype, n, d);
      for (long i = 0; i < t.numElements(); i++) {
        int bits = random.nextInt();
        t.setFloat(i, dtype == F32 ? Float.intBitsToFloat(bits) : BFloat16.toFloat((short) bits));
      }
      return t;
    }

    static DType other(DType from) {
      return from == F32 ? BF16 : F32;
    }

    @ParameterizedTest(name = "({0}, {1}) from {2}")
    @MethodSource("shapes")
    void matchesReferenceBitForBit(int n, int d, DType from) {
      Tensor in = randomBits(arena, new Random(seed(n, d, from)), from, n, d);
      check.exact("convert", call, new Tensor[] {in}, garbage(arena, other(from), n, d));
    }

    @Test
    void rowsAreIndependentOfTheBatch() {
      Tensor in = randomBits(arena, new Random(44), F32, 17, 64);
      check.rowsIndependent("convert", (k, out, from, to) -> k.convert(out[0], in.rows(from, to)), 17,
          garbage(arena, BF16, 17, 64));
    }

    @Test
    void acceptsRowStridedViews() {
      var random = new Random(45);
      check.viewsAgree("convert", call, new Tensor[] {randomBits(arena, random, F32, 5, 67)},
          new Tensor[] {garbage(arena, BF16, 5, 67)});
      check.viewsAgree("convert", call, new Tensor[] {randomBits(arena, random, BF16, 5, 67)},
          new Tensor[] {garbage(arena, F32, 5, 67)});
    }

    @Test
    void rejectsUnsupportedPairsAndShapes() {
      var random = new Random(46);
      Tensor out = garbage(arena, BF16, 3, 8);
      check.rejected("convert", k -> k.convert(out, uniform(arena, random, BF16, 1, 3, 8)), out);
      check.rejected("convert", k -> k.convert(out, int8(arena, random, 3, 8)), out);
      check.rejected("convert", k -> k.convert(out, uniform(arena, random, F32, 1, 3, 9)), out);
    }
  }
}
