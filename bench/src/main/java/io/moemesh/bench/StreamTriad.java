package io.moemesh.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * STREAM's triad {@code a[i] = b[i] + s·c[i]} over three off-heap F32 arrays of {@link #ARRAY_BYTES} each,
 * split evenly over platform threads. Plain Java: C2 vectorizes the loop (AVX-512 here) but uses ordinary
 * stores, so like a STREAM build without streaming stores it also pays the write-allocate reads it does not
 * count. Bytes counted per pass are STREAM's: two arrays read plus one written, 12 bytes per element.
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
  double bestSeconds(int threads, int passes, int warmupPasses) throws InterruptedException {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (int p = 0; p < warmupPasses; p++) pass(pool, threads);
      double best = Double.MAX_VALUE;
      for (int p = 0; p < passes; p++) best = Math.min(best, pass(pool, threads));
      verify();
      return best;
    } finally {
      pool.shutdownNow();
    }
  }

  private double pass(ExecutorService pool, int threads) throws InterruptedException {
    long t0 = System.nanoTime();
    List<Future<?>> parts = new ArrayList<>(threads);
    for (int t = 0; t < threads; t++) {
      long from = split(t, threads), to = split(t + 1, threads);
      parts.add(pool.submit(() -> triadRange(from, to)));
    }
    for (Future<?> part : parts) {
      try {
        part.get();
      } catch (ExecutionException e) {
        throw new IllegalStateException("triad pass failed", e.getCause());
      }
    }
    return (System.nanoTime() - t0) / 1e9;
  }

  /** Start of thread t's part, on a 64-byte boundary. */
  private long split(int t, int threads) {
    return t == threads ? n : (n / threads) / 16 * 16 * t;
  }

  private void triadRange(long from, long to) {
    for (long start = from; start < to; start += CHUNK) triad(a, b, c, SCALAR, start, Math.min(to, start + CHUNK));
  }

  private static void triad(MemorySegment a, MemorySegment b, MemorySegment c, float s, long from, long to) {
    for (long i = from; i < to; i++) a.setAtIndex(F32, i, b.getAtIndex(F32, i) + s * c.getAtIndex(F32, i));
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
