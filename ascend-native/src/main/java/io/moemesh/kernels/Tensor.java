package io.moemesh.kernels;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * A typed, shaped, strided view of off-heap memory owned by a {@link TensorArena}. Views ({@link #rows},
 * {@link #reshape}) share memory with their source. Element accessors take a <em>logical</em> row-major flat
 * index and honour strides; they are for tests, loading and small glue, not for inner loops (those are
 * {@link Kernels}). Kernels need the last dimension contiguous and all leading dimensions collapsible into
 * one evenly strided row dimension; {@link #rowStride()} checks that.
 */
public final class Tensor {
  private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
  private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED;
  private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;

  private final MemorySegment segment; // starts at element (0, ..., 0)
  private final DType dtype;
  private final int[] shape;
  private final long[] strides; // in elements

  private Tensor(MemorySegment segment, DType dtype, int[] shape, long[] strides) {
    this.segment = segment;
    this.dtype = dtype;
    this.shape = shape;
    this.strides = strides;
  }

  static Tensor contiguous(MemorySegment segment, DType dtype, int... shape) {
    for (int d : shape) if (d < 0) throw new IllegalArgumentException("negative dimension in " + shapeString(shape));
    return new Tensor(segment, dtype, shape.clone(), contiguousStrides(shape));
  }

  public DType dtype() { return dtype; }

  public int rank() { return shape.length; }

  public int dim(int axis) { return shape[axis < 0 ? shape.length + axis : axis]; }

  public int[] shape() { return shape.clone(); }

  public long stride(int axis) { return strides[axis < 0 ? strides.length + axis : axis]; }

  public long numElements() { return numElements(shape); }

  /** Whether elements are laid out densely in row-major order. */
  public boolean isContiguous() {
    long expected = 1;
    for (int a = shape.length - 1; a >= 0; a--) {
      if (strides[a] != expected) return false;
      expected *= shape[a];
    }
    return true;
  }

  /** Whether the owning arena is still open. */
  public boolean isAlive() { return segment.scope().isAlive(); }

  /** Number of rows when the tensor is read as a matrix (all leading dimensions collapsed). */
  public long numRows() {
    long rows = 1; // the leading dimensions' product, also when rows are empty
    for (int i = 0; i < shape.length - 1; i++) rows *= shape[i];
    return rows;
  }

  /** Elements per row (the last dimension). */
  public int rowLength() { return shape.length == 0 ? 1 : shape[shape.length - 1]; }

  /**
   * Distance in elements between consecutive rows of the collapsed matrix view, or -1 when the last
   * dimension is not contiguous or the leading dimensions cannot be collapsed into one stride.
   */
  public long rowStride() {
    int r = shape.length;
    if (r == 0) return 1;
    if (shape[r - 1] > 1 && strides[r - 1] != 1) return -1;
    if (r == 1) return shape[0];
    long rowStride = strides[r - 2];
    for (int a = r - 3; a >= 0; a--) {
      if (shape[a] > 1 && strides[a] != strides[a + 1] * shape[a + 1]) return -1;
    }
    return rowStride;
  }

  /** Rows {@code [from, to)} along the first dimension, sharing memory. */
  public Tensor rows(int from, int to) {
    if (shape.length == 0 || from < 0 || to < from || to > shape[0])
      throw new IndexOutOfBoundsException("rows [" + from + ", " + to + ") of " + this);
    int[] s = shape.clone();
    s[0] = to - from;
    long offset = from * strides[0] * dtype.byteSize();
    long bytes = s[0] == 0 ? 0 : spanBytes(s, strides, dtype);
    return new Tensor(segment.asSlice(offset, bytes), dtype, s, strides);
  }

  /**
   * Columns {@code [from, to)} of the last dimension, sharing memory. Rows keep their stride, so the view is
   * row-strided ({@link #rowStride()} &gt; {@link #rowLength()}): e.g. DeepSeek's MLA splits one projection's
   * output into {@code q_nope} and {@code q_pe} this way.
   */
  public Tensor cols(int from, int to) {
    int last = shape.length - 1;
    if (shape.length == 0 || from < 0 || to < from || to > shape[last])
      throw new IndexOutOfBoundsException("cols [" + from + ", " + to + ") of " + this);
    int[] s = shape.clone();
    s[last] = to - from;
    long offset = from * strides[last] * dtype.byteSize();
    long bytes = numElements(s) == 0 ? 0 : spanBytes(s, strides, dtype);
    return new Tensor(segment.asSlice(offset, bytes), dtype, s, strides);
  }

  /** The same contiguous memory under another shape with the same number of elements. */
  public Tensor reshape(int... newShape) {
    if (!isContiguous()) throw new IllegalStateException("reshape of a non-contiguous tensor " + this);
    if (numElements(newShape) != numElements())
      throw new IllegalArgumentException("cannot reshape " + this + " to " + shapeString(newShape));
    return contiguous(segment, dtype, newShape);
  }

  // ---- element access by logical flat index -------------------------------------------------------------

  public float getFloat(long index) {
    long at = byteOffset(index);
    return switch (dtype) {
      case F32 -> segment.get(F32, at);
      case BF16 -> BFloat16.toFloat(segment.get(BF16, at));
      case F8_E4M3 -> Fp8E4M3.toFloat(segment.get(ValueLayout.JAVA_BYTE, at));
      case I8 -> segment.get(ValueLayout.JAVA_BYTE, at);
      case I32 -> segment.get(I32, at);
    };
  }

  /** Stores {@code value}; BF16 rounds to nearest even. Not defined for F8_E4M3 (weights arrive encoded). */
  public void setFloat(long index, float value) {
    long at = byteOffset(index);
    switch (dtype) {
      case F32 -> segment.set(F32, at, value);
      case BF16 -> segment.set(BF16, at, BFloat16.fromFloat(value));
      default -> throw new UnsupportedOperationException("setFloat on " + dtype + " tensor " + this);
    }
  }

  public int getInt(long index) {
    requireDType(DType.I32);
    return segment.get(I32, byteOffset(index));
  }

  public void setInt(long index, int value) {
    requireDType(DType.I32);
    segment.set(I32, byteOffset(index), value);
  }

  /** The raw byte of a 1-byte element (I8 or F8_E4M3). */
  public byte getByte(long index) {
    if (dtype.byteSize() != 1) throw new UnsupportedOperationException("getByte on " + dtype + " tensor " + this);
    return segment.get(ValueLayout.JAVA_BYTE, byteOffset(index));
  }

  public void setByte(long index, byte value) {
    if (dtype.byteSize() != 1) throw new UnsupportedOperationException("setByte on " + dtype + " tensor " + this);
    segment.set(ValueLayout.JAVA_BYTE, byteOffset(index), value);
  }

  /** Stores {@code values} in logical row-major order (converting to BF16 when needed). */
  public void copyFrom(float[] values) {
    if (values.length != numElements())
      throw new IllegalArgumentException(values.length + " values for " + this);
    if (dtype == DType.F32 && isContiguous()) { // the step's small F32 inputs (gate weights): one bulk copy
      MemorySegment.copy(values, 0, segment, F32, 0, values.length);
      return;
    }
    for (int i = 0; i < values.length; i++) setFloat(i, values[i]);
  }

  /** Stores {@code values} (I32 tensors) in logical row-major order. */
  public void copyFrom(int[] values) {
    requireDType(DType.I32);
    if (values.length != numElements())
      throw new IllegalArgumentException(values.length + " values for " + this);
    if (isContiguous()) { // block tables, context lengths, token rows: every layer of every step
      MemorySegment.copy(values, 0, segment, I32, 0, values.length);
      return;
    }
    for (int i = 0; i < values.length; i++) setInt(i, values[i]);
  }

  /** All elements of an I32 tensor, in logical row-major order. */
  public int[] toIntArray() {
    requireDType(DType.I32);
    int[] out = new int[Math.toIntExact(numElements())];
    if (isContiguous()) {
      MemorySegment.copy(segment, I32, 0, out, 0, out.length);
      return out;
    }
    for (int i = 0; i < out.length; i++) out[i] = getInt(i);
    return out;
  }

  /** All elements as floats, in logical row-major order. */
  public float[] toFloatArray() {
    float[] out = new float[Math.toIntExact(numElements())];
    if (dtype == DType.F32 && isContiguous()) { // the logits rows of every step: one bulk copy
      MemorySegment.copy(segment, ValueLayout.JAVA_FLOAT_UNALIGNED, 0, out, 0, out.length);
      return out;
    }
    for (int i = 0; i < out.length; i++) out[i] = getFloat(i);
    return out;
  }

  /** Copies {@code source}, which must have the same dtype and number of elements, byte for byte. */
  public void copyFrom(Tensor source) {
    if (source.dtype != dtype || source.numElements() != numElements())
      throw new IllegalArgumentException("cannot copy " + source + " into " + this);
    if (isContiguous() && source.isContiguous()) {
      MemorySegment.copy(source.segment, 0, segment, 0, numElements() * dtype.byteSize());
      return;
    }
    int size = dtype.byteSize();
    long rowStride = rowStride(), sourceRowStride = source.rowStride();
    if (rowStride >= 0 && sourceRowStride >= 0 && rowLength() == source.rowLength()) { // row by row
      long rowBytes = (long) rowLength() * size;
      for (long r = 0; r < numRows(); r++)
        MemorySegment.copy(source.segment, r * sourceRowStride * size, segment, r * rowStride * size, rowBytes);
      return;
    }
    for (long i = 0; i < numElements(); i++)
      MemorySegment.copy(source.segment, source.byteOffset(i), segment, byteOffset(i), size);
  }

  /**
   * Copies raw little-endian bytes (e.g. a tensor's slice of a memory-mapped checkpoint) into this contiguous
   * tensor; {@code bytes.remaining()} must equal its byte size. The buffer's position is left unchanged.
   */
  public void copyFromBytes(ByteBuffer bytes) {
    long size = numElements() * dtype.byteSize();
    if (!isContiguous()) throw new IllegalStateException("copyFromBytes into a non-contiguous tensor " + this);
    if (bytes.remaining() != size)
      throw new IllegalArgumentException(bytes.remaining() + " bytes for " + this + ", which holds " + size);
    MemorySegment.copy(MemorySegment.ofBuffer(bytes), 0, segment, 0, size);
  }

  /** This contiguous tensor's bytes (little-endian), read-only, for writing it to a file. */
  public ByteBuffer asReadOnlyBytes() {
    if (!isContiguous()) throw new IllegalStateException("asReadOnlyBytes of a non-contiguous tensor " + this);
    return segment.asSlice(0, numElements() * dtype.byteSize()).asByteBuffer().asReadOnlyBuffer()
        .order(ByteOrder.LITTLE_ENDIAN);
  }

  @Override
  public String toString() {
    return dtype + shapeString(shape);
  }

  // ---- package-private: the native boundary ---------------------------------------------------------------

  MemorySegment segment() { return segment; }

  /** Whether the first element sits on a {@code bytes}-byte boundary. */
  boolean isAligned(int bytes) { return segment.address() % bytes == 0; }

  // ---- helpers --------------------------------------------------------------------------------------------

  private void requireDType(DType expected) {
    if (dtype != expected) throw new UnsupportedOperationException("expected " + expected + ", got " + this);
  }

  private long byteOffset(long index) {
    long n = numElements();
    if (index < 0 || index >= n) throw new IndexOutOfBoundsException("index " + index + " of " + this);
    long offset = 0;
    for (int a = shape.length - 1; a >= 0; a--) {
      offset += (index % shape[a]) * strides[a];
      index /= shape[a];
    }
    return offset * dtype.byteSize();
  }

  static long numElements(int[] shape) {
    long n = 1;
    for (int d : shape) n = Math.multiplyExact(n, d);
    return n;
  }

  static String shapeString(int[] shape) {
    return Arrays.toString(shape).replace('[', '(').replace(']', ')');
  }

  private static long[] contiguousStrides(int[] shape) {
    long[] strides = new long[shape.length];
    long s = 1;
    for (int a = shape.length - 1; a >= 0; a--) {
      strides[a] = s;
      s *= shape[a];
    }
    return strides;
  }

  private static long spanBytes(int[] shape, long[] strides, DType dtype) {
    long last = 0;
    for (int a = 0; a < shape.length; a++) last += (shape[a] - 1L) * strides[a];
    return (last + 1) * dtype.byteSize();
  }
}
