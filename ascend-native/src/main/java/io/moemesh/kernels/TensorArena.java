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

  private final Arena arena; // null for a workspace
  private final Workspace workspace; // null for an ordinary arena

  private TensorArena(Arena arena, Workspace workspace) {
    this.arena = arena;
    this.workspace = workspace;
  }

  /** An arena whose memory is freed by {@link #close()}. */
  public static TensorArena open() {
    return new TensorArena(Arena.ofShared(), null);
  }

  /**
   * An arena for one thread's short-lived scratch (a forward pass): cheaper to close than {@link #open()},
   * and its tensors may be touched from Java only by the thread that opened it (kernels may use any thread).
   */
  public static TensorArena confined() {
    return new TensorArena(Arena.ofConfined(), null);
  }

  /**
   * Scratch memory reused across steps: allocations bump a pointer through one block that {@link #reset()}
   * rewinds, so a decode step neither calls malloc nor faults fresh pages in. The block grows to the largest
   * step seen and then stays. After {@code reset()} every tensor handed out before is garbage (its memory is
   * reused): a workspace is for one step's temporaries, used by one thread.
   */
  public static TensorArena workspace() {
    return new TensorArena(null, new Workspace());
  }

  /** Rewinds a {@link #workspace()}: everything it handed out is dead from now on. */
  public void reset() {
    if (workspace == null) throw new IllegalStateException("reset() is for workspaces");
    workspace.reset();
  }

  /** A contiguous, zeroed tensor. */
  public Tensor allocate(DType dtype, int... shape) {
    long bytes = Math.max(Tensor.numElements(shape) * dtype.byteSize(), 1);
    MemorySegment segment = workspace != null ? workspace.take(bytes) : arena.allocate(bytes, ALIGNMENT);
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
    if (workspace != null) workspace.close();
    else arena.close();
  }

  /** A bump allocator over one block; outgrowing it opens a bigger block, and the next reset keeps only that. */
  private static final class Workspace {
    private Arena blockArena = Arena.ofShared();
    private MemorySegment block = blockArena.allocate(1 << 20, ALIGNMENT);
    private final java.util.List<Arena> outgrown = new java.util.ArrayList<>();
    private long used;

    MemorySegment take(long bytes) {
      long start = (used + ALIGNMENT - 1) & -ALIGNMENT;
      if (start + bytes > block.byteSize()) {
        outgrown.add(blockArena);
        blockArena = Arena.ofShared();
        block = blockArena.allocate(Math.max(2 * block.byteSize(), 2 * bytes), ALIGNMENT);
        start = 0;
      }
      used = start + bytes;
      return block.asSlice(start, bytes).fill((byte) 0);
    }

    void reset() {
      outgrown.forEach(Arena::close);
      outgrown.clear();
      used = 0;
    }

    void close() {
      reset();
      blockArena.close();
    }
  }
}
