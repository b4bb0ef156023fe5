package io.moemesh.model.checkpoint;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Tensor;
import java.util.Arrays;

/** A tensor to be written by {@link SafetensorsWriter}: its name, dtype and shape, fixed before any data. */
public record TensorSpec(String name, DType dtype, int[] shape) {
  public TensorSpec {
    if (name == null || name.isEmpty()) throw new IllegalArgumentException("a tensor needs a non-empty name");
    if (name.equals(SafetensorsHeader.METADATA_KEY)) throw new IllegalArgumentException("the name " + name + " is reserved");
    shape = shape.clone();
    for (int d : shape) if (d < 0) throw new IllegalArgumentException("negative dimension in " + name + Arrays.toString(shape));
  }

  /** The spec that {@code tensor} satisfies. */
  public static TensorSpec of(String name, Tensor tensor) {
    return new TensorSpec(name, tensor.dtype(), tensor.shape());
  }

  @Override
  public int[] shape() {
    return shape.clone();
  }

  public long byteLength() {
    long n = dtype.byteSize();
    for (int d : shape) n = Math.multiplyExact(n, d);
    return n;
  }

  /** Whether {@code tensor} has this spec's dtype and shape. */
  public boolean matches(Tensor tensor) {
    return tensor.dtype() == dtype && Arrays.equals(tensor.shape(), shape);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TensorSpec s && name.equals(s.name) && dtype == s.dtype && Arrays.equals(shape, s.shape);
  }

  @Override
  public int hashCode() {
    return 31 * (31 * name.hashCode() + dtype.hashCode()) + Arrays.hashCode(shape);
  }

  @Override
  public String toString() {
    return name + ": " + dtype + Arrays.toString(shape).replace('[', '(').replace(']', ')');
  }
}
