package io.moemesh.kernels;

import java.util.Arrays;
import java.util.stream.Collectors;

/** Argument checks for one op call; every failure names the op and the shapes it was given. */
final class Check {
  private final String op;
  private final Tensor[] args;

  Check(String op, Tensor... args) {
    this.op = op;
    this.args = args;
    for (Tensor t : args) usable(t);
  }

  /** The checks of this call and {@code more} tensors: only those are checked here, failures list them all. */
  Check with(Tensor... more) {
    Tensor[] all = Arrays.copyOf(args, args.length + more.length);
    System.arraycopy(more, 0, all, args.length, more.length);
    return new Check(op, all, args.length);
  }

  private Check(String op, Tensor[] args, int checkedAlready) {
    this.op = op;
    this.args = args;
    for (int i = checkedAlready; i < args.length; i++) usable(args[i]);
  }

  private void usable(Tensor t) {
    if (t == null) fail("a tensor argument is null");
    if (!t.isAlive()) fail("tensor " + t + " belongs to a closed arena");
    if (t.rowStride() < 0) fail("tensor " + t + " needs a contiguous last dimension and collapsible rows");
    if (!t.isAligned(t.dtype().byteSize())) fail("tensor " + t + " is not aligned to its element size");
  }

  Check dtype(Tensor t, String name, DType... allowed) {
    if (!Arrays.asList(allowed).contains(t.dtype()))
      fail(name + " must be " + Arrays.stream(allowed).map(Enum::name).collect(Collectors.joining(" or ")) + ", got " + t);
    return this;
  }

  Check rows(Tensor t, long rows) {
    if (t.numRows() != rows) fail("expected " + rows + " rows in " + t);
    return this;
  }

  Check cols(Tensor t, long cols) {
    if (t.rowLength() != cols) fail("expected last dimension " + cols + " in " + t);
    return this;
  }

  Check elements(Tensor t, long n) {
    if (t.numElements() != n || t.rowStride() != t.rowLength() && t.numRows() > 1)
      fail("expected " + n + " contiguous elements in " + t);
    return this;
  }

  Check sameMatrix(Tensor a, Tensor b) {
    if (a.numRows() != b.numRows() || a.rowLength() != b.rowLength()) fail(a + " and " + b + " differ in shape");
    return this;
  }

  void fail(String why) {
    String shapes = Arrays.stream(args).map(String::valueOf).collect(Collectors.joining(", "));
    throw new KernelException(op, why + " [args: " + shapes + "]");
  }
}
