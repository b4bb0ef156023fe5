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

  /**
   * A point to {@link #release} back to: in a workspace, everything allocated after the mark is dead after the
   * release (a forward pass releases each layer's temporaries, so a step needs one layer's scratch, not the sum
   * of all layers'). Elsewhere a no-op: memory stays until close.
   */
  public long mark() {
    return workspace == null ? 0 : workspace.mark();
  }

  /** Rewinds a workspace to {@code mark}; see {@link #mark()}. */
  public void release(long mark) {
    if (workspace != null) workspace.release(mark);
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

  /**
   * A bump allocator over blocks. Past the end of the current block it opens another (never smaller than the
   * request or 16 MiB); a reset after a step that needed several merges them into one block of the step's size,
   * so a steady stream of similar steps runs in one block with no allocation at all. Fresh memory is already
   * zero, so only bytes handed out before are zeroed again.
   */
  private static final class Workspace {
    private static final long MIN_BLOCK = 16L << 20;

    private record Block(Arena arena, MemorySegment memory) {}

    private final java.util.List<Block> blocks = new java.util.ArrayList<>();
    private Block current = newBlock(MIN_BLOCK);
    private long used;  // bytes handed out of the current block
    private long dirty; // bytes of the current block ever handed out (those need zeroing before reuse)
    private long retired; // bytes used in the blocks outgrown during this step
    private long stepPeak; // the most bytes in use at once since the last reset

    MemorySegment take(long bytes) {
      long start = (used + ALIGNMENT - 1) & -ALIGNMENT;
      if (start + bytes > current.memory().byteSize()) {
        blocks.add(current);
        retired += used;
        current = newBlock(Math.max(bytes, MIN_BLOCK));
        start = 0;
        dirty = 0;
      }
      MemorySegment segment = current.memory().asSlice(start, bytes);
      if (start < dirty) segment.asSlice(0, Math.min(bytes, dirty - start)).fill((byte) 0);
      used = start + bytes;
      dirty = Math.max(dirty, used);
      stepPeak = Math.max(stepPeak, retired + used + ALIGNMENT);
      return segment;
    }

    /** The current block's fill level, tagged with how many blocks were outgrown (a release cannot cross one). */
    long mark() {
      return ((long) blocks.size() << 40) | used;
    }

    void release(long mark) {
      if ((mark >>> 40) == blocks.size()) used = Math.min(used, mark & ((1L << 40) - 1));
    }

    void reset() {
      if (!blocks.isEmpty()) { // the step outgrew one block: next time, one block that holds it all
        blocks.forEach(b -> b.arena().close());
        blocks.clear();
        current.arena().close();
        current = newBlock(Math.max(stepPeak, MIN_BLOCK));
        dirty = 0;
      }
      used = 0;
      retired = 0;
      stepPeak = 0;
    }

    void close() {
      blocks.forEach(b -> b.arena().close());
      blocks.clear();
      current.arena().close();
    }

    private static Block newBlock(long bytes) {
      Arena arena = Arena.ofShared();
      return new Block(arena, arena.allocate(bytes, ALIGNMENT));
    }
  }
}
