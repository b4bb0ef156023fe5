package io.moemesh.kernels;

import static io.moemesh.kernels.TestTensors.absolute;
import static io.moemesh.kernels.TestTensors.assertClose;

import io.moemesh.kernels.ContractChecks.Call;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.provider.Arguments;

/**
 * What an op's contract tests run on: the kernels under test, their tolerance, and a fresh arena with
 * {@link ContractChecks} on it for every test. {@link KernelsContract} provides these to each of its
 * {@code @Nested} op groups; the groups' tests are default methods of the op interfaces in
 * {@link LinearOpsContract}, {@link RowOpsContract}, {@link RoutingContract} and {@link AttentionContract}.
 * The case lists and the seed shared by every op are here too.
 */
interface ContractBase {

  /** The implementation under test. */
  Kernels kernels();

  /** The relative tolerance of op's float results (see {@link KernelsContract}'s class comment). */
  double tolerance(String op);

  /** This test's arena: open for the test, closed after it. */
  TensorArena arena();

  /** The checks against the reference, allocating in {@link #arena()}. */
  ContractChecks check();

  default void assertWithinTolerance(String op, Tensor actual, Tensor expected, double[] magnitude) {
    assertClose(actual, expected, magnitude, tolerance(op), op);
  }

  /** Runs op on the kernels and the reference and compares within tolerance · |expected|. */
  default void assertElementwiseClose(String op, Call call, Tensor[] in, Tensor initialOut) {
    Tensor actual = check().actual(op, call, in, initialOut)[0];
    Tensor expected = check().expected(call, in, initialOut)[0];
    assertWithinTolerance(op, actual, expected, absolute(expected));
  }

  /** Row counts: a GEMV, a few, more than a vector register's worth. */
  int[] ROWS = {1, 3, 17};
  /** Row and reduction lengths: below, at and past a vector width, and a prime past many. */
  int[] LENGTHS = {1, 7, 64, 1021};
  /** Output columns of the matmuls. */
  int[] OUTPUTS = {1, 5, 131};

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
}
