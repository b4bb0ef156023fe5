package io.moemesh.kernels;

import static io.moemesh.kernels.DType.BF16;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * What the hand-checked tests of the spec share: the reference kernels, a fresh arena per test, and small
 * tensors written out literally. Those tests ({@code Reference*Test}, by op family) are small worked examples
 * whose answers are computed on paper or by an independent, straightforward formula in the test (in double
 * where it matters). The contract tests ({@link KernelsContract}) then hold every other implementation to
 * this one. Declares no tests itself, so subclasses inherit none.
 */
abstract class ReferenceFixture {
  final Kernels kernels = new ReferenceKernels();
  TensorArena arena;

  @BeforeEach
  void openArena() {
    arena = TensorArena.open();
  }

  @AfterEach
  void closeArena() {
    arena.close();
  }

  Tensor floats(float[] values, int... shape) {
    return arena.ofFloats(values, shape);
  }

  Tensor bf16(float[] values, int... shape) {
    Tensor t = arena.allocate(BF16, shape);
    t.copyFrom(values);
    return t;
  }

  byte[] bytes(Tensor t) {
    byte[] b = new byte[Math.toIntExact(t.numElements())];
    for (int i = 0; i < b.length; i++) b[i] = t.getByte(i);
    return b;
  }

  int[] ints(Tensor t) {
    int[] v = new int[Math.toIntExact(t.numElements())];
    for (int i = 0; i < v.length; i++) v[i] = t.getInt(i);
    return v;
  }
}
