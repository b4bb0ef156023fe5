package io.moemesh.kernels;

import static io.moemesh.kernels.ContractBase.rowsByLength;
import static io.moemesh.kernels.ContractBase.rowsByLengthFrom;
import static io.moemesh.kernels.ContractBase.seed;
import static io.moemesh.kernels.DType.BF16;
import static io.moemesh.kernels.DType.F32;
import static io.moemesh.kernels.DType.I32;
import static io.moemesh.kernels.TestTensors.assertBitEqual;
import static io.moemesh.kernels.TestTensors.garbage;
import static io.moemesh.kernels.TestTensors.int8;
import static io.moemesh.kernels.TestTensors.rowScaled;
import static io.moemesh.kernels.TestTensors.uniform;
import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.kernels.ContractChecks.Call;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The contract of the row-wise ops — rmsNorm, rope, add, convert, argmaxRows (SwiGLU's in {@link SwigluContract}) — one
 * interface per op, run as a {@code @Nested} group of {@link KernelsContract}. add, convert and argmaxRows must match
 * the reference bit for bit; the others within tolerance of |expected| (rope: of its pair's magnitude).
 */
final class RowOpsContract {
  private RowOpsContract() {}

  interface RmsNorm extends ContractBase {
    static Stream<Arguments> shapes() {
      return rowsByLength();
    }

    static Call call() {
      return (k, out, in) -> k.rmsNorm(out[0], in[0], in[1], 1e-6f);
    }

    private Tensor[] inputs(Random random, int n, int d) {
      return new Tensor[] {rowScaled(arena(), random, F32, n, d), uniform(arena(), random, F32, 2, d)};
    }

    @ParameterizedTest(name = "x ({0}, {1})")
    @MethodSource("shapes")
    default void matchesReferenceWithinToleranceOfResult(int n, int d) {
      assertElementwiseClose("rmsNorm", call(), inputs(new Random(seed(n, d)), n, d), garbage(arena(), F32, n, d));
    }

    @Test
    default void inPlaceEqualsOutOfPlace() {
      Tensor[] in = inputs(new Random(16), 5, 67);
      Tensor apart = check().actual("rmsNorm", call(), in, garbage(arena(), F32, 5, 67))[0];
      Tensor inPlace = check().actual("rmsNorm", (k, out, none) -> k.rmsNorm(out[0], out[0], in[1], 1e-6f), null, in[0])[0];
      assertBitEqual(inPlace, apart, "rmsNorm in place");
    }

    @Test
    default void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(17), 17, 64);
      check().rowsIndependent("rmsNorm", (k, out, from, to) -> k.rmsNorm(out[0], in[0].rows(from, to), in[1], 1e-6f), 17,
          garbage(arena(), F32, 17, 64));
    }

    @Test
    default void acceptsRowStridedViews() {
      check().viewsAgree("rmsNorm", call(), inputs(new Random(18), 5, 67), new Tensor[] {garbage(arena(), F32, 5, 67)});
    }

    @Test
    default void rejectsWrongDtypesShapesAndEps() {
      TensorArena arena = arena();
      Tensor out = garbage(arena, F32, 3, 8);
      Tensor[] in = inputs(new Random(19), 3, 8);
      var random = new Random(20);
      check().rejected("rmsNorm", k -> k.rmsNorm(out, in[0], uniform(arena, random, F32, 1, 7), 1e-6f), out);
      check().rejected("rmsNorm", k -> k.rmsNorm(out, uniform(arena, random, BF16, 1, 3, 8), in[1], 1e-6f), out);
      check().rejected("rmsNorm", k -> k.rmsNorm(out, in[0], in[1], 0f), out);
    }
  }

  interface Rope extends ContractBase {
    int MAX_POSITIONS = 1000;

    static Stream<Arguments> shapes() {
      List<Arguments> cases = new ArrayList<>();
      for (int n : ROWS) for (int heads : new int[] {0, 1, 3}) for (int d : new int[] {2, 8, 64})
        cases.add(Arguments.of(n, heads, d));
      return cases.stream();
    }

    static Call call() {
      return (k, out, in) -> k.rope(out[0], in[0], new RopeTable(in[1], in[2]));
    }

    /** x (n, d) when heads = 0, else (n, heads, d); positions; the cos and sin tables (DeepSeek's base 10000). */
    private Tensor[] inputs(Random random, int n, int heads, int d) {
      float[] freqs = new float[d / 2];
      for (int i = 0; i < freqs.length; i++) freqs[i] = (float) Math.pow(10000, -2.0 * i / d);
      RopeTable table = RopeTable.of(arena(), freqs, MAX_POSITIONS);
      Tensor x = heads == 0 ? uniform(arena(), random, F32, 4, n, d) : uniform(arena(), random, F32, 4, n, heads, d);
      return new Tensor[] {x, TestTensors.ints(arena(), random, 0, MAX_POSITIONS, n), table.cos(), table.sin()};
    }

    @ParameterizedTest(name = "n {0}, heads {1}, d {2}")
    @MethodSource("shapes")
    default void matchesReferenceWithinToleranceOfPairMagnitude(int n, int heads, int d) {
      Tensor[] xAndTable = inputs(new Random(seed(n, heads, d)), n, heads, d);
      Tensor x = xAndTable[0];
      Tensor[] in = {xAndTable[1], xAndTable[2], xAndTable[3]};
      Tensor actual = check().actual("rope", call(), in, x)[0];
      Tensor expected = check().expected(call(), in, x)[0];
      float[] v = x.toFloatArray();
      double[] magnitude = new double[v.length];
      for (int i = 0; i < v.length; i++) magnitude[i] = Math.abs(v[i & ~1]) + Math.abs(v[i | 1]);
      assertWithinTolerance("rope", actual, expected, magnitude);
    }

    @Test
    default void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(21), 17, 3, 64);
      RopeTable table = new RopeTable(in[2], in[3]);
      check().rowsIndependent("rope", (k, out, from, to) -> k.rope(out[0], in[1].rows(from, to), table), 17, in[0]);
    }

    @Test
    default void acceptsRowStridedViews() {
      Tensor[] in = inputs(new Random(22), 5, 3, 16);
      check().viewsAgree("rope", call(), new Tensor[] {in[1], in[2], in[3]}, new Tensor[] {in[0]}, in[2], in[3]);
    }

    @Test
    default void rejectsPositionsOutsideTheTableWritingNothing() {
      TensorArena arena = arena();
      Tensor[] in = inputs(new Random(23), 3, 2, 8);
      RopeTable table = new RopeTable(in[2], in[3]);
      Tensor x = in[0];
      for (int bad : new int[] {-1, MAX_POSITIONS}) {
        Tensor positions = arena.ofInts(new int[] {0, 5, bad}, 3);
        check().rejected("rope", k -> k.rope(x, positions, table), x);
      }
      check().rejected("rope", k -> k.rope(x, arena.ofInts(new int[] {0, 1}, 2), table), x);
      Tensor wide = uniform(arena, new Random(24), F32, 1, 3, 2, 10);
      check().rejected("rope", k -> k.rope(wide, in[1], table), wide);
      // The tables must be contiguous (the C side takes them without a row stride).
      RopeTable strided = new RopeTable(TestTensors.strided(arena, in[2]).view(), TestTensors.strided(arena, in[3]).view());
      check().rejected("rope", k -> k.rope(x, in[1], strided), x);
    }
  }

  interface Add extends ContractBase {
    static Stream<Arguments> shapes() {
      return rowsByLength();
    }

    static Call call() {
      return (k, out, in) -> k.add(out[0], in[0], in[1]);
    }

    private Tensor[] inputs(Random random, int n, int d) {
      return new Tensor[] {rowScaled(arena(), random, F32, n, d), rowScaled(arena(), random, F32, n, d)};
    }

    @ParameterizedTest(name = "({0}, {1})")
    @MethodSource("shapes")
    default void matchesReferenceBitForBit(int n, int d) {
      check().exact("add", call(), inputs(new Random(seed(n, d)), n, d), garbage(arena(), F32, n, d));
    }

    @Test
    default void inPlaceEqualsOutOfPlace() {
      Tensor[] in = inputs(new Random(51), 5, 67);
      Tensor apart = check().actual("add", call(), in, garbage(arena(), F32, 5, 67))[0];
      Tensor intoA = check().actual("add", (k, out, none) -> k.add(out[0], out[0], in[1]), null, in[0])[0];
      Tensor intoB = check().actual("add", (k, out, none) -> k.add(out[0], in[0], out[0]), null, in[1])[0];
      assertBitEqual(intoA, apart, "add into a");
      assertBitEqual(intoB, apart, "add into b");
    }

    @Test
    default void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(52), 17, 64);
      check().rowsIndependent("add", (k, out, from, to) -> k.add(out[0], in[0].rows(from, to), in[1].rows(from, to)), 17,
          garbage(arena(), F32, 17, 64));
    }

    @Test
    default void acceptsRowStridedViews() {
      check().viewsAgree("add", call(), inputs(new Random(53), 5, 67), new Tensor[] {garbage(arena(), F32, 5, 67)});
    }

    @Test
    default void rejectsWrongDtypesAndShapes() {
      TensorArena arena = arena();
      var random = new Random(54);
      Tensor out = garbage(arena, F32, 3, 8);
      Tensor[] in = inputs(random, 3, 8);
      check().rejected("add", k -> k.add(out, in[0], uniform(arena, random, F32, 1, 3, 9)), out);
      check().rejected("add", k -> k.add(out, uniform(arena, random, BF16, 1, 3, 8), in[1]), out);
    }
  }

  interface ArgmaxRows extends ContractBase {
    static Stream<Arguments> shapes() {
      return rowsByLength();
    }

    static Call call() {
      return (k, out, in) -> k.argmaxRows(out[0], in[0]);
    }

    /** Random rows whose largest value also appears once more, later, at a random place: a tie to break. */
    private Tensor[] inputs(Random random, int n, int d) {
      Tensor x = rowScaled(arena(), random, F32, n, d);
      for (int t = 0; t < n && d > 1; t++) {
        int best = 0;
        for (int j = 1; j < d; j++) if (x.getFloat((long) t * d + j) > x.getFloat((long) t * d + best)) best = j;
        if (best < d - 1) x.setFloat((long) t * d + best + 1 + random.nextInt(d - 1 - best), x.getFloat((long) t * d + best));
      }
      return new Tensor[] {x};
    }

    @ParameterizedTest(name = "({0}, {1})")
    @MethodSource("shapes")
    default void matchesReferenceBitForBit(int n, int d) {
      check().exact("argmaxRows", call(), inputs(new Random(seed(n, d)), n, d), garbage(arena(), I32, n));
    }

    /**
     * Row by row: ties to the lowest index, -0 equal to +0, -∞ a value like any other; a NaN or +∞ anywhere (first,
     * in a full 16-lane chunk, in the tail) or a row of only -∞ gives -1, and the rows around it still get theirs.
     */
    @Test
    default void breaksTiesLowAndGivesMinusOneForRowsWithoutAToken() {
      float inf = Float.POSITIVE_INFINITY, nan = Float.NaN;
      float[][] rows = {
          {1, 3, 3, 2}, {-0f, 0f, -1, -0f}, {0f, -0f, -2, -3}, {-inf, -5, -inf, -5}, {7, -inf, -inf, -inf},
          {nan, 1, 2, 3}, {1, 2, 3, inf}, {-inf, -inf, -inf, -inf}, {2, 1, nan, 9}, {-inf, inf, 0, 0}};
      int[] expected = {1, 0, 0, 1, 0, -1, -1, -1, -1, -1};
      int d = 37; // a full 16-lane chunk, then a tail: each case also sits at the end of a longer row
      Tensor x = arena().allocate(F32, 2 * rows.length, d);
      for (int r = 0; r < rows.length; r++) {
        for (int j = 0; j < d; j++) {
          x.setFloat((long) r * d + j, j < 4 ? rows[r][j] : Float.NEGATIVE_INFINITY);
          x.setFloat((long) (rows.length + r) * d + j, j < d - 4 ? Float.NEGATIVE_INFINITY : rows[r][j - (d - 4)]);
        }
      }
      Tensor ids = check().exact("argmaxRows", call(), new Tensor[] {x}, garbage(arena(), I32, 2 * rows.length))[0];
      for (int r = 0; r < rows.length; r++) {
        assertThat(ids.getInt(r)).as("row %d at the start", r).isEqualTo(expected[r]);
        assertThat(ids.getInt(rows.length + r)).as("row %d at the end", r)
            .isEqualTo(expected[r] < 0 ? -1 : d - 4 + expected[r]);
      }
    }

    @Test
    default void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(61), 17, 300);
      check().rowsIndependent("argmaxRows", (k, out, from, to) -> k.argmaxRows(out[0], in[0].rows(from, to)), 17,
          garbage(arena(), I32, 17));
    }

    @Test
    default void acceptsRowStridedViews() {
      Tensor ids = garbage(arena(), I32, 5);
      check().viewsAgree("argmaxRows", call(), inputs(new Random(62), 5, 67), new Tensor[] {ids}, ids);
    }

    @Test
    default void rejectsWrongDtypesAndShapes() {
      TensorArena arena = arena();
      var random = new Random(63);
      Tensor ids = garbage(arena, I32, 3);
      check().rejected("argmaxRows", k -> k.argmaxRows(ids, uniform(arena, random, BF16, 1, 3, 8)), ids);
      check().rejected("argmaxRows", k -> k.argmaxRows(ids, uniform(arena, random, F32, 1, 4, 8)), ids);
      check().rejected("argmaxRows", k -> k.argmaxRows(garbage(arena, F32, 3), uniform(arena, random, F32, 1, 3, 8)));
      check().rejected("argmaxRows", k -> k.argmaxRows(ids, arena.allocate(F32, 3, 0)), ids);
    }
  }

  interface Convert extends ContractBase {
    static Stream<Arguments> shapes() {
      return rowsByLengthFrom(F32, BF16);
    }

    static Call call() {
      return (k, out, in) -> k.convert(out[0], in[0]);
    }

    /** Every bit pattern equally likely: NaNs, infinities, subnormals, ties and signed zeros all appear. */
    private static Tensor randomBits(TensorArena arena, Random random, DType dtype, int n, int d) {
      Tensor t = arena.allocate(dtype, n, d);
      for (long i = 0; i < t.numElements(); i++) {
        int bits = random.nextInt();
        t.setFloat(i, dtype == F32 ? Float.intBitsToFloat(bits) : BFloat16.toFloat((short) bits));
      }
      return t;
    }

    private static DType other(DType from) {
      return from == F32 ? BF16 : F32;
    }

    @ParameterizedTest(name = "({0}, {1}) from {2}")
    @MethodSource("shapes")
    default void matchesReferenceBitForBit(int n, int d, DType from) {
      Tensor in = randomBits(arena(), new Random(seed(n, d, from)), from, n, d);
      check().exact("convert", call(), new Tensor[] {in}, garbage(arena(), other(from), n, d));
    }

    /**
     * Raw bits, NaN payloads included: every exponent with mantissas at and around the rounding ties (so
     * subnormals, the largest one rounding up to the smallest normal, finite values rounding to infinity), ±Inf,
     * signalling and quiet NaNs with payloads in either half, in rows of 37 (vector tails of 32 and 16).
     */
    @Test
    default void edgeCasesGiveTheScalarTwinsBitsNanPayloadsIncluded() {
      int[] mantissas = {0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x10000, 0x17FFF, 0x18000, 0x18001, 0x7F8000, 0x7FFFFF};
      List<Integer> patterns = new ArrayList<>();
      for (int sign : new int[] {0, 0x80000000})
        for (int exponent = 0; exponent < 256; exponent++)
          for (int mantissa : mantissas) patterns.add(sign | exponent << 23 | mantissa);
      int d = 37, n = (patterns.size() + d - 1) / d;
      var f32 = ByteBuffer.allocate(4 * n * d).order(ByteOrder.LITTLE_ENDIAN);
      short[] expected = new short[n * d], actual = new short[n * d];
      for (int i = 0; i < n * d; i++) {
        int bits = patterns.get(i % patterns.size());
        f32.putInt(bits);
        expected[i] = BFloat16.fromFloat(Float.intBitsToFloat(bits)); // a quieted signalling NaN rounds alike
      }
      Tensor in = arena().allocate(F32, n, d), out = garbage(arena(), BF16, n, d);
      in.copyFromBytes(f32.flip());
      kernels().convert(out, in);
      out.asReadOnlyBytes().asShortBuffer().get(actual);
      assertThat(actual).as("F32 -> BF16 raw bits").containsExactly(expected);

      var bf16 = ByteBuffer.allocate(2 * 65536).order(ByteOrder.LITTLE_ENDIAN);
      int[] widened = new int[65536], shifted = new int[65536];
      for (int i = 0; i < 65536; i++) {
        bf16.putShort((short) i);
        shifted[i] = i << 16;
      }
      Tensor all = arena().allocate(BF16, 1024, 64), wide = garbage(arena(), F32, 1024, 64);
      all.copyFromBytes(bf16.flip());
      kernels().convert(wide, all);
      wide.asReadOnlyBytes().asIntBuffer().get(widened);
      assertThat(widened).as("every BF16 -> F32, raw bits").containsExactly(shifted);
    }

    @Test
    default void rowsAreIndependentOfTheBatch() {
      Tensor in = randomBits(arena(), new Random(44), F32, 17, 64);
      check().rowsIndependent("convert", (k, out, from, to) -> k.convert(out[0], in.rows(from, to)), 17,
          garbage(arena(), BF16, 17, 64));
    }

    @Test
    default void acceptsRowStridedViews() {
      var random = new Random(45);
      check().viewsAgree("convert", call(), new Tensor[] {randomBits(arena(), random, F32, 5, 67)},
          new Tensor[] {garbage(arena(), BF16, 5, 67)});
      check().viewsAgree("convert", call(), new Tensor[] {randomBits(arena(), random, BF16, 5, 67)},
          new Tensor[] {garbage(arena(), F32, 5, 67)});
    }

    @Test
    default void rejectsUnsupportedPairsAndShapes() {
      TensorArena arena = arena();
      var random = new Random(46);
      Tensor out = garbage(arena, BF16, 3, 8);
      check().rejected("convert", k -> k.convert(out, uniform(arena, random, BF16, 1, 3, 8)), out);
      check().rejected("convert", k -> k.convert(out, int8(arena, random, 3, 8)), out);
      check().rejected("convert", k -> k.convert(out, uniform(arena, random, F32, 1, 3, 9)), out);
    }
  }
}
