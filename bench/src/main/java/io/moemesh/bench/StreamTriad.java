package io.moemesh.bench;

import io.moemesh.kernels.NativeKernels;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * STREAM's triad {@code a[i] = b[i] + s·c[i]} over three off-heap F32 arrays of {@link #ARRAY_BYTES} each, run by
 * the kernel library's C loop on its thread pool ({@link NativeKernels#streamTriad}): the same code whatever the
 * JIT makes of a loop (a Java loop read 1.3-1.5x lower than C's on an AVX2 machine). Ordinary stores, so like a
 * STREAM build without streaming stores it also pays the write-allocate reads it does not count. Bytes counted
 * per pass are STREAM's: two arrays read plus one written, 12 bytes per element.
 */
final class StreamTriad implements AutoCloseable {
  static final long ARRAY_BYTES = 256L << 20;
  private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT;
  private static final long CHUNK = 1L << 18; // elements per call of the inner loop (1 MiB)
  private static final float SCALAR = 3f;

  private final Arena arena = Arena.ofShared();
  private final long n = ARRAY_BYTES / Float.BYTES;
  private final MemorySegment a = arena.allocate(ARRAY_BYTES, 64);
  private final MemorySegment b = arena.allocate(ARRAY_BYTES, 64);
  private final MemorySegment c = arena.allocate(ARRAY_BYTES, 64);

  StreamTriad() {
    fill(b, 1f);
    fill(c, 2f);
  }

  private static void fill(MemorySegment array, float value) {
    MemorySegment chunk = array.asSlice(0, CHUNK * Float.BYTES);
    for (long i = 0; i < CHUNK; i++) chunk.setAtIndex(F32, i, value);
    for (long at = chunk.byteSize(); at < array.byteSize(); at += chunk.byteSize())
      MemorySegment.copy(chunk, 0, array, at, Math.min(chunk.byteSize(), array.byteSize() - at));
  }

  static String shape() {
    return "3 x " + (ARRAY_BYTES >> 20) + " MiB F32";
  }

  /** Bytes STREAM counts for one pass: b and c read, a written. */
  long bytesPerPass() {
    return 3 * ARRAY_BYTES;
  }

  /** Seconds of the fastest of {@code passes} timed passes (after untimed warm-up passes), as STREAM reports. */
  double bestSeconds(int threads, int passes, int warmupPasses) {
    // The portable path: the triad is plain C whatever the path, and every CPU runs this one.
    try (NativeKernels kernels = NativeKernels.create(threads, NativeKernels.Isa.PORTABLE)) {
      for (int p = 0; p < warmupPasses; p++) pass(kernels);
      double best = Double.MAX_VALUE;
      for (int p = 0; p < passes; p++) best = Math.min(best, pass(kernels));
      verify();
      return best;
    }
  }

  private double pass(NativeKernels kernels) {
    long t0 = System.nanoTime();
    kernels.streamTriad(a, b, c, n, SCALAR);
    return (System.nanoTime() - t0) / 1e9;
  }

  private void verify() {
    float expected = 1f + SCALAR * 2f;
    for (long i = 0; i < n; i += n / 1024 + 1) {
      if (a.getAtIndex(F32, i) != expected) throw new IllegalStateException("triad result wrong at " + i);
    }
    if (a.getAtIndex(F32, n - 1) != expected) throw new IllegalStateException("triad result wrong at the end");
  }

  @Override
  public void close() {
    arena.close();
  }
}
