package io.moemesh.kernels;

import static io.moemesh.kernels.ContractBase.rowsByLength;
import static io.moemesh.kernels.ContractBase.seed;
import static io.moemesh.kernels.DType.BF16;
import static io.moemesh.kernels.DType.F32;
import static io.moemesh.kernels.DType.I8;
import static io.moemesh.kernels.TestTensors.assertBitEqual;
import static io.moemesh.kernels.TestTensors.garbage;
import static io.moemesh.kernels.TestTensors.uniform;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.moemesh.kernels.ContractChecks.Call;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The contract of SwiGLU's ops — siluMul, and siluMulQuantize (siluMul then quantizeRows in one pass) — one interface
 * per op, run as a {@code @Nested} group of {@link KernelsContract}. siluMul matches the reference within tolerance of
 * |expected|; siluMulQuantize gives the bits of its two ops on the same backend.
 */
final class SwigluContract {
  private SwigluContract() {}

  /** gate mostly in ±20, every 7th element ±100 (e^100 overflows F32); up in ±2. */
  static Tensor[] gateAndUp(TensorArena arena, Random random, int n, int d) {
    Tensor gate = uniform(arena, random, F32, 20, n, d);
    for (long i = 0; i < gate.numElements(); i += 7) gate.setFloat(i, random.nextBoolean() ? 100f : -100f);
    return new Tensor[] {gate, uniform(arena, random, F32, 2, n, d)};
  }

  interface SiluMul extends ContractBase {
    static Stream<Arguments> shapes() {
      return rowsByLength();
    }

    static Call call() {
      return (k, out, in) -> k.siluMul(out[0], in[0], in[1]);
    }

    private Tensor[] inputs(Random random, int n, int d) {
      return gateAndUp(arena(), random, n, d);
    }

    @ParameterizedTest(name = "({0}, {1})")
    @MethodSource("shapes")
    default void matchesReferenceWithinToleranceOfResult(int n, int d) {
      assertElementwiseClose("siluMul", call(), inputs(new Random(seed(n, d)), n, d), garbage(arena(), F32, n, d));
    }

    @Test
    default void inPlaceEqualsOutOfPlace() {
      Tensor[] in = inputs(new Random(25), 5, 67);
      Tensor apart = check().actual("siluMul", call(), in, garbage(arena(), F32, 5, 67))[0];
      Tensor intoGate = check().actual("siluMul", (k, out, none) -> k.siluMul(out[0], out[0], in[1]), null, in[0])[0];
      Tensor intoUp = check().actual("siluMul", (k, out, none) -> k.siluMul(out[0], in[0], out[0]), null, in[1])[0];
      assertBitEqual(intoGate, apart, "siluMul into gate");
      assertBitEqual(intoUp, apart, "siluMul into up");
    }

    @Test
    default void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(26), 17, 64);
      check().rowsIndependent("siluMul",
          (k, out, from, to) -> k.siluMul(out[0], in[0].rows(from, to), in[1].rows(from, to)), 17,
          garbage(arena(), F32, 17, 64));
    }

    @Test
    default void acceptsRowStridedViews() {
      check().viewsAgree("siluMul", call(), inputs(new Random(27), 5, 67), new Tensor[] {garbage(arena(), F32, 5, 67)});
    }

    @Test
    default void rejectsWrongDtypesAndShapes() {
      TensorArena arena = arena();
      Tensor out = garbage(arena, F32, 3, 8);
      Tensor[] in = inputs(new Random(28), 3, 8);
      var random = new Random(29);
      check().rejected("siluMul", k -> k.siluMul(out, in[0], uniform(arena, random, F32, 1, 3, 9)), out);
      check().rejected("siluMul", k -> k.siluMul(out, uniform(arena, random, BF16, 1, 3, 8), in[1]), out);
    }
  }

  /** siluMulQuantize is its spec's two ops in one pass: their bits exactly, on each backend. */
  interface SiluMulQuantize extends ContractBase {
    static Stream<Arguments> shapes() {
      return rowsByLength();
    }

    static Call call() {
      return (k, out, in) -> k.siluMulQuantize(out[0], out[1], in[0], in[1]);
    }

    /** {@link #gateAndUp}, with up's row 0 all zeros (a zero row's scale). */
    private Tensor[] inputs(Random random, int n, int d) {
      Tensor[] in = gateAndUp(arena(), random, n, d);
      for (int c = 0; c < d; c++) in[1].setFloat(c, 0);
      return in;
    }

    @ParameterizedTest(name = "({0}, {1})")
    @MethodSource("shapes")
    default void equalsQuantizeRowsOfSiluMulBitForBit(int n, int d) {
      Tensor[] in = inputs(new Random(seed(n, d)), n, d);
      Tensor product = check().actual("siluMul", SiluMul.call(), in, garbage(arena(), F32, n, d))[0];
      Tensor[] apart = check().actual("quantizeRows", (k, out, x) -> k.quantizeRows(out[0], out[1], x[0]), new Tensor[] {product},
          garbage(arena(), I8, n, d), garbage(arena(), F32, n));
      Tensor[] fused = check().actual("siluMulQuantize", call(), in, garbage(arena(), I8, n, d), garbage(arena(), F32, n));
      assertBitEqual(fused[0], apart[0], "siluMulQuantize q against quantizeRows(siluMul)");
      assertBitEqual(fused[1], apart[1], "siluMulQuantize scales against quantizeRows(siluMul)");
    }

    @Test
    default void matchesTheReferenceOnItsOwnSpec() {
      Tensor[] in = inputs(new Random(31), 5, 67);
      Tensor[] actual = check().actual("siluMulQuantize", call(), in, garbage(arena(), I8, 5, 67), garbage(arena(), F32, 5));
      Tensor[] expected = check().expected(call(), in, garbage(arena(), I8, 5, 67), garbage(arena(), F32, 5));
      // siluMul's e^x is within tolerance of the reference's, not its bits: a quantized value may move by one step
      for (long i = 0; i < actual[0].numElements(); i++)
        assertThat(Math.abs(actual[0].getFloat(i) - expected[0].getFloat(i))).as("q[%d]", i).isLessThanOrEqualTo(1f);
      for (long t = 0; t < 5; t++)
        assertThat(actual[1].getFloat(t)).as("scale %d", t).isCloseTo(expected[1].getFloat(t), within(1e-5f * Math.abs(expected[1].getFloat(t))));
    }

    @Test
    default void rowsAreIndependentOfTheBatch() {
      Tensor[] in = inputs(new Random(32), 17, 64);
      check().rowsIndependent("siluMulQuantize",
          (k, out, from, to) -> k.siluMulQuantize(out[0], out[1], in[0].rows(from, to), in[1].rows(from, to)), 17,
          garbage(arena(), I8, 17, 64), garbage(arena(), F32, 17));
    }

    @Test
    default void acceptsRowStridedViews() {
      check().viewsAgree("siluMulQuantize", call(), inputs(new Random(33), 5, 67),
          new Tensor[] {garbage(arena(), I8, 5, 67), garbage(arena(), F32, 5)});
    }

    @Test
    default void rejectsWrongDtypesAndShapes() {
      TensorArena arena = arena();
      Tensor q = garbage(arena, I8, 3, 8), scales = garbage(arena, F32, 3);
      Tensor[] in = inputs(new Random(34), 3, 8);
      var random = new Random(35);
      check().rejected("siluMulQuantize", k -> k.siluMulQuantize(q, scales, in[0], uniform(arena, random, F32, 1, 3, 9)), q, scales);
      check().rejected("siluMulQuantize", k -> k.siluMulQuantize(q, garbage(arena, F32, 4), in[0], in[1]), q);
      check().rejected("siluMulQuantize", k -> k.siluMulQuantize(garbage(arena, F32, 3, 8), scales, in[0], in[1]), scales);
      check().rejected("siluMulQuantize", k -> k.siluMulQuantize(q, scales, uniform(arena, random, BF16, 1, 3, 8), in[1]), q, scales);
    }
  }
}
