package io.moemesh.kernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Owns off-heap tensors: everything allocated here lives until {@link #close()}, then every tensor of the
 * arena is dead and any kernel given one fails with a {@link KernelException}. Memory is 64-byte aligned
 * (a cache line, one AVX-512 register) and zero-filled. Tensors may be read and written from any thread.
 */
public final class TensorArena implements AutoCloseable {
  /** Alignment of every allocation, in bytes. */
  public static final int ALIGNMENT = 64;

  private final Arena arena;

  private TensorArena(Arena arena) {
    this.arena = arena;
  }

  /** An arena whose memory is freed by {@link #close()}. */
  public static TensorArena open() {
    return new TensorArena(Arena.ofShared());
  }

  /**
   * An arena for one thread's short-lived scratch (a forward pass): cheaper to close than {@link #open()},
   * and its tensors may be touched from Java only by the thread that opened it (kernels may use any thread).
   */
  public static TensorArena confined() {
    return new TensorArena(Arena.ofConfined());
  }

  /** A contiguous, zeroed tensor. */
  public Tensor allocate(DType dtype, int... shape) {
    long bytes = Tensor.numElements(shape) * dtype.byteSize();
    MemorySegment segment = arena.allocate(Math.max(bytes, 1), ALIGNMENT);
    return Tensor.contiguous(segment, dtype, shape);
  }

  /** A contiguous F32 tensor holding {@code values}. */
  public Tensor ofFloats(float[] values, int... shape) {
    Tensor t = allocate(DType.F32, shape);
    t.copyFrom(values);
    return t;
  }

  /** A contiguous I32 tensor holding {@code values}. */
  public Tensor ofInts(int[] values, int... shape) {
    if (values.length != Tensor.numElements(shape))
      throw new IllegalArgumentException(values.length + " values for shape " + Tensor.shapeString(shape));
    Tensor t = allocate(DType.I32, shape);
    for (int i = 0; i < values.length; i++) t.setInt(i, values[i]);
    return t;
  }

  @Override
  public void close() {
    arena.close();
  }
}
