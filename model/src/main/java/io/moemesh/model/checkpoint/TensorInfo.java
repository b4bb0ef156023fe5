package io.moemesh.model.checkpoint;

import java.util.Arrays;

/**
 * One tensor as a safetensors header describes it: a validated dtype, shape and byte length
 * ({@code byteLength == product(shape) × dtype.byteSize()}). Immutable: {@link #shape()} returns a copy.
 */
public record TensorInfo(String name, StDType dtype, long[] shape, long byteLength) {
  public TensorInfo {
    shape = shape.clone();
  }

  @Override
  public long[] shape() {
    return shape.clone();
  }

  public int rank() {
    return shape.length;
  }

  public long numElements() {
    return byteLength / dtype.byteSize();
  }

  /** Whether the shape equals {@code other}, dimension by dimension. */
  public boolean hasShape(int[] other) {
    if (other.length != shape.length) return false;
    for (int i = 0; i < shape.length; i++) if (shape[i] != other[i]) return false;
    return true;
  }

  public String shapeString() {
    return Arrays.toString(shape).replace('[', '(').replace(']', ')');
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TensorInfo t && name.equals(t.name) && dtype == t.dtype && Arrays.equals(shape, t.shape)
        && byteLength == t.byteLength;
  }

  @Override
  public int hashCode() {
    return 31 * (31 * name.hashCode() + dtype.hashCode()) + Arrays.hashCode(shape);
  }

  @Override
  public String toString() {
    return name + ": " + dtype + shapeString();
  }
}
