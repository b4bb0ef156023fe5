package io.moemesh.kernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Owns off-heap tensors: everything allocated here lives until {@link #close()}, then every tensor of the
 * arena is dead and any kernel given one fails with a {@link KernelException}. Memory is 64-byte aligned
 * (a cache line, one AVX-512 register) and zero-filled (but for {@link #empty} in a workspace). Tensors may be read
 * and written from any thread.
 */
public final class TensorArena implements AutoCloseable {
  /** Alignment of every allocation, in bytes. */
  public static final int ALIGNMENT = 64;

  private final Arena arena; // null for a workspace or a model arena
  private final Workspace workspace; // null but for a workspace
  private final HugePageChunks model; // null but for a model arena

  private TensorArena(Arena arena, Workspace workspace, HugePageChunks model) {
    this.arena = arena;
    this.workspace = workspace;
    this.model = model;
  }

  /** An arena whose memory is freed by {@link #close()}. */
  public static TensorArena open() {
    return new TensorArena(Arena.ofShared(), null, null);
  }

  /**
   * An arena for what lives as long as a model and every decode step streams through, its weights and its KV cache:
   * as {@link #open()}, but its memory comes in 2 MiB-aligned chunks that Linux backs with transparent huge pages
   * where it can (see HugePageChunks).
   */
  public static TensorArena forModel() {
    return new TensorArena(null, null, new HugePageChunks());
  }

  /**
   * An arena for one thread's short-lived scratch (a forward pass): cheaper to close than {@link #open()},
   * and its tensors may be touched from Java only by the thread that opened it (kernels may use any thread).
   */
  public static TensorArena confined() {
    return new TensorArena(Arena.ofConfined(), null, null);
  }

  /**
   * Scratch memory reused across steps: allocations bump a pointer through one block that {@link #reset()}
   * rewinds, so a decode step neither calls malloc nor faults fresh pages in. The block grows to the largest
   * step seen and then stays. After {@code reset()} every tensor handed out before is garbage (its memory is
   * reused): a workspace is for one step's temporaries, used by one thread.
   */
  public static TensorArena workspace() {
    return new TensorArena(null, new Workspace(), null);
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

  /** Bytes of a workspace's current block (for tests). */
  long workspaceBlockBytes() {
    return workspace.current.memory().byteSize();
  }

  /** Rewinds a workspace to {@code mark}; see {@link #mark()}. */
  public void release(long mark) {
    if (workspace != null) workspace.release(mark);
  }

  /** A contiguous, zeroed tensor. */
  public Tensor allocate(DType dtype, int... shape) {
    return allocate(dtype, shape, true);
  }

  /**
   * A contiguous tensor for an op to write whole before anything reads it: in a {@link #workspace()} its bytes are
   * whatever an earlier step left there (a decode step's temporaries are tens of MiB, and zeroing them cost more
   * than the Java between the kernels); elsewhere zeroed, as {@link #allocate}.
   */
  public Tensor empty(DType dtype, int... shape) {
    return allocate(dtype, shape, false);
  }

  private Tensor allocate(DType dtype, int[] shape, boolean zeroed) {
    long bytes = Math.max(Tensor.numElements(shape) * dtype.byteSize(), 1);
    MemorySegment segment = workspace != null ? workspace.take(bytes, zeroed)
        : model != null ? model.take(bytes)
        : arena.allocate(bytes, ALIGNMENT);
    return Tensor.contiguous(segment, dtype, shape);
  }

  /** A contiguous F32 tensor holding {@code values}. */
  public Tensor ofFloats(float[] values, int... shape) {
    Tensor t = empty(DType.F32, shape); // written whole (copyFrom checks the count)
    t.copyFrom(values);
    return t;
  }

  /** A contiguous I32 tensor holding {@code values}. */
  public Tensor ofInts(int[] values, int... shape) {
    if (values.length != Tensor.numElements(shape))
      throw new IllegalArgumentException(values.length + " values for shape " + Tensor.shapeString(shape));
    Tensor t = empty(DType.I32, shape); // written whole
    t.copyFrom(values);
    return t;
  }

  @Override
  public void close() {
    if (workspace != null) workspace.close();
    else if (model != null) model.close();
    else arena.close();
  }

  /**
   * A bump allocator over blocks. Past the end of the current block it opens another (never smaller than the
   * request or 16 MiB); a reset after a step that needed several merges them into one block of the step's size
   * plus a quarter (decode steps grow a little with every token), so a steady stream of similar steps runs in
   * one block with no allocation at all. Blocks are mappings of their own on huge pages where Linux has them
   * (HugePageChunks.mapped): fresh memory is already zero, so only bytes handed out before are zeroed again.
   */
  private static final class Workspace {
    private static final long MIN_BLOCK = 16L << 20;

    private record Block(Arena arena, MemorySegment memory) {}

    private final java.util.List<Block> blocks = new java.util.ArrayList<>();
    private Block current = newBlock(MIN_BLOCK);
    private long base;  // the current block's first byte, as an offset in the step's single logical stack
    private long top;   // the logical stack's top: what one block big enough for the step would have in use
    private long dirty; // bytes of the current block ever handed out (those need zeroing before reuse)
    private long stepPeak; // the highest top since the last reset: the block size the step needs

    MemorySegment take(long bytes, boolean zeroed) {
      long start = (top + ALIGNMENT - 1) & -ALIGNMENT; // base is aligned, so this aligns within the block too
      if (start < base) base = start; // released below this block: all of it is free, re-anchor it here
      if (start - base + bytes > current.memory().byteSize()) { // outgrown: a fresh block from here on
        blocks.add(current);
        // twice the last block: a step that needs more than a block needs it for every layer, and later layers
        // re-anchor in this one, so a big first step opens a few blocks rather than a few per layer
        current = newBlock(Math.max(bytes, Math.max(MIN_BLOCK, 2 * current.memory().byteSize())));
        base = start;
        dirty = 0;
      }
      long at = start - base;
      MemorySegment segment = current.memory().asSlice(at, bytes);
      if (zeroed && at < dirty) segment.asSlice(0, Math.min(bytes, dirty - at)).fill((byte) 0);
      top = start + bytes;
      dirty = Math.max(dirty, top - base);
      stepPeak = Math.max(stepPeak, top + ALIGNMENT);
      return segment;
    }

    long mark() {
      return top;
    }

    /**
     * Back to {@code mark}. Within the current block that frees its tail; a mark below the block means all of
     * the block is younger than the mark, hence free (outgrown blocks just wait for the reset).
     */
    void release(long mark) {
      top = mark;
    }

    void reset() {
      if (!blocks.isEmpty()) { // the step outgrew one block: next time, one block that holds it all
        blocks.forEach(b -> b.arena().close());
        blocks.clear();
        current.arena().close();
        current = newBlock(Math.max(stepPeak + stepPeak / 4, MIN_BLOCK)); // headroom: steps grow with context
        dirty = 0;
      }
      base = 0;
      top = 0;
      stepPeak = 0;
    }

    void close() {
      blocks.forEach(b -> b.arena().close());
      blocks.clear();
      current.arena().close();
    }

    private static Block newBlock(long bytes) { // zeroed: fresh pages
      Arena arena = Arena.ofShared();
      return new Block(arena, HugePageChunks.mapped(bytes, arena));
    }
  }
}
