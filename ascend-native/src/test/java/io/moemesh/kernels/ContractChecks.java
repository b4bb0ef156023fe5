package io.moemesh.kernels;

import static io.moemesh.kernels.TestTensors.assertBitEqual;
import static io.moemesh.kernels.TestTensors.copy;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.kernels.TestTensors.Embedded;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

/**
 * The checks {@link KernelsContract} applies op by op, written once: run twice (determinism), row
 * independence, views, rejection. Outputs are always fresh copies of the given initial tensors, so in-place
 * ops (rope, scatterAdd) and garbage-filled outputs work alike.
 */
final class ContractChecks {
  /** An op applied to output tensors {@code out} and input tensors {@code in}. */
  @FunctionalInterface
  interface Call {
    void run(Kernels k, Tensor[] out, Tensor[] in);
  }

  /** An op on rows [from, to) of its row-indexed inputs, writing {@code out} (the outputs of those rows). */
  @FunctionalInterface
  interface RowsCall {
    void run(Kernels k, Tensor[] out, int from, int to);
  }

  private final Kernels kernels;
  private final Kernels reference;
  private final TensorArena arena;

  ContractChecks(Kernels kernels, Kernels reference, TensorArena arena) {
    this.kernels = kernels;
    this.reference = reference;
    this.arena = arena;
  }

  /** The kernels under test on fresh copies of {@code initial}, twice; the runs must agree bit for bit. */
  Tensor[] actual(String op, Call call, Tensor[] in, Tensor... initial) {
    Tensor[] first = run(kernels, call, in, initial);
    Tensor[] second = run(kernels, call, in, initial);
    for (int i = 0; i < first.length; i++) assertBitEqual(second[i], first[i], op + " run twice, output " + i);
    return first;
  }

  /** The reference on fresh copies of {@code initial}. */
  Tensor[] expected(Call call, Tensor[] in, Tensor... initial) {
    return run(reference, call, in, initial);
  }

  /** Bit-exact agreement with the reference (and determinism). Returns the outputs of the kernels under test. */
  Tensor[] exact(String op, Call call, Tensor[] in, Tensor... initial) {
    Tensor[] actual = actual(op, call, in, initial);
    Tensor[] expected = expected(call, in, initial);
    for (int i = 0; i < actual.length; i++) assertBitEqual(actual[i], expected[i], op + " vs reference, output " + i);
    return actual;
  }

  private Tensor[] run(Kernels k, Call call, Tensor[] in, Tensor[] initial) {
    Tensor[] out = Arrays.stream(initial).map(t -> copy(arena, t)).toArray(Tensor[]::new);
    call.run(k, out, in);
    return out;
  }

  /** The whole batch at once equals each row alone, bit for bit (every output's first dimension is the row). */
  void rowsIndependent(String op, RowsCall call, int rows, Tensor... initial) {
    Tensor[] batch = actual(op, (k, out, in) -> call.run(k, out, 0, rows), null, initial);
    for (int t = 0; t < rows; t++) {
      int row = t;
      Tensor[] single = Arrays.stream(initial).map(i -> i.rows(row, row + 1)).toArray(Tensor[]::new);
      Tensor[] alone = actual(op, (k, out, in) -> call.run(k, out, row, row + 1), null, single);
      for (int i = 0; i < batch.length; i++)
        assertBitEqual(alone[i], batch[i].rows(t, t + 1), op + " row " + t + " alone, output " + i);
    }
  }

  /**
   * The op on views gives the bits it gives on contiguous tensors: every tensor is copied into a bigger one,
   * as a row-strided view, or an offset-only view when listed in {@code offsetOnly} (1-D tensors always).
   * Nothing outside the output views is written, and the inputs are not written at all.
   */
  void viewsAgree(String op, Call call, Tensor[] in, Tensor[] initial, Tensor... offsetOnly) {
    Tensor[] plain = actual(op, call, in, initial);
    List<Embedded> outs = embed(initial, offsetOnly);
    List<Embedded> ins = embed(in, offsetOnly);
    call.run(kernels, views(outs), views(ins));
    for (int i = 0; i < outs.size(); i++) {
      assertBitEqual(outs.get(i).view(), plain[i], op + " output " + i + " as the view " + outs.get(i).view());
      outs.get(i).assertPaddingUntouched(op + " output " + i);
    }
    for (int i = 0; i < ins.size(); i++) {
      assertBitEqual(ins.get(i).view(), in[i], op + " input " + i + " was written");
      ins.get(i).assertPaddingUntouched(op + " input " + i);
    }
  }

  private List<Embedded> embed(Tensor[] tensors, Tensor[] offsetOnly) {
    List<Embedded> embedded = new ArrayList<>();
    for (Tensor t : tensors) {
      boolean offset = Arrays.stream(offsetOnly).anyMatch(o -> o == t);
      embedded.add(offset ? TestTensors.offset(arena, t) : TestTensors.strided(arena, t));
    }
    return embedded;
  }

  private static Tensor[] views(List<Embedded> embedded) {
    return embedded.stream().map(Embedded::view).toArray(Tensor[]::new);
  }

  /** {@code call} throws a KernelException naming {@code op} and leaves {@code untouched} bitwise unchanged. */
  void rejected(String op, Consumer<Kernels> call, Tensor... untouched) {
    Tensor[] before = Arrays.stream(untouched).map(t -> copy(arena, t)).toArray(Tensor[]::new);
    assertThatThrownBy(() -> call.accept(kernels)).isInstanceOf(KernelException.class)
        .hasMessageStartingWith(op + ": ");
    for (int i = 0; i < untouched.length; i++)
      assertBitEqual(untouched[i], before[i], op + " wrote output " + i + " before rejecting its input");
  }
}
