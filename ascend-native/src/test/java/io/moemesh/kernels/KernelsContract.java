package io.moemesh.kernels;

import io.moemesh.kernels.SampleCalls.SampleCall;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.TestFactory;

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
 *
 * <p><b>Layout.</b> Each op's tests are the default methods of its interface in {@link LinearOpsContract},
 * {@link RowOpsContract}, {@link RoutingContract} or {@link AttentionContract}; this class runs each op as a
 * {@code @Nested} group (at the end), on the kernels, arena and checks it provides through {@link Fixture}.
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

  /**
   * What this contract gives an op's tests ({@link ContractBase}): its kernels and tolerance, and the arena
   * and checks {@link #openArena} made for the current test.
   */
  abstract class Fixture implements ContractBase {
    @Override
    public Kernels kernels() {
      return KernelsContract.this.kernels();
    }

    @Override
    public double tolerance(String op) {
      return KernelsContract.this.tolerance(op);
    }

    @Override
    public TensorArena arena() {
      return arena;
    }

    @Override
    public ContractChecks check() {
      return check;
    }
  }

  // One group per op; the tests are the default methods of the op's interface.

  @Nested class Matmul extends Fixture implements LinearOpsContract.Matmul {}
  @Nested class QuantizeRows extends Fixture implements LinearOpsContract.QuantizeRows {}
  @Nested class MatmulInt8 extends Fixture implements LinearOpsContract.MatmulInt8 {}
  @Nested class MatmulInt8Grouped extends Fixture implements GroupedLinearContract.MatmulInt8Grouped {}
  @Nested class MatmulHeads extends Fixture implements GroupedLinearContract.MatmulHeads {}
  @Nested class MatmulHeadsKm extends Fixture implements GroupedLinearContract.MatmulHeadsKm {}
  @Nested class MatmulHeadsKmPairs extends Fixture implements GroupedLinearContract.MatmulHeadsKmPairs {}
  @Nested class DequantizeFp8 extends Fixture implements LinearOpsContract.DequantizeFp8 {}

  @Nested class RmsNorm extends Fixture implements RowOpsContract.RmsNorm {}
  @Nested class Rope extends Fixture implements RowOpsContract.Rope {}
  @Nested class SiluMul extends Fixture implements SwigluContract.SiluMul {}
  @Nested class SiluMulQuantize extends Fixture implements SwigluContract.SiluMulQuantize {}
  @Nested class Add extends Fixture implements RowOpsContract.Add {}
  @Nested class Convert extends Fixture implements RowOpsContract.Convert {}
  @Nested class ArgmaxRows extends Fixture implements RowOpsContract.ArgmaxRows {}

  @Nested class MoeGate extends Fixture implements RoutingContract.MoeGate {}
  @Nested class GatherQuantize extends Fixture implements RoutingContract.GatherQuantize {}
  @Nested class ScatterAdd extends Fixture implements RoutingContract.ScatterAdd {}

  @Nested class MlaDecode extends Fixture implements AttentionContract.MlaDecode {}
  @Nested class CausalAttention extends Fixture implements AttentionContract.CausalAttention {}
}
