package io.moemesh.model.checkpoint;

import io.moemesh.kernels.Tensor;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Moves tensor bytes between a mapped safetensors file and off-heap tensors, in chunks (so that tensors past
 * 2 GiB, which no single {@link ByteBuffer} can hold, still work): a bulk copy when the dtypes agree, a tight
 * loop through a heap scratch buffer when a 16-bit float is widened to F32.
 */
final class TensorCopy {
  /** Bytes per bulk copy. */
  private static final int COPY_CHUNK = 64 << 20;
  /** Elements per conversion step. */
  private static final int CONVERT_CHUNK = 1 << 18;

  /** How a 16-bit source element becomes a float. */
  enum Widen { BF16, F16 }

  private TensorCopy() {}

  /** {@code dest}, contiguous, as one flat run of elements that {@link Tensor#rows} can cut into chunks. */
  static Tensor flat(Tensor dest) {
    long n = dest.numElements();
    if (n > Integer.MAX_VALUE)
      throw new IllegalArgumentException("tensor " + dest + " has more than 2^31 elements");
    return dest.reshape((int) n);
  }

  /** Copies tensor {@code name} of {@code file} byte for byte into {@code dest} (same dtype, contiguous). */
  static void copy(SafetensorsFile file, String name, Tensor dest) {
    Tensor flat = flat(dest);
    int size = dest.dtype().byteSize();
    int n = flat.dim(0);
    int step = Math.max(1, COPY_CHUNK / size);
    for (int from = 0; from < n; from += step) {
      int to = (int) Math.min(n, (long) from + step);
      flat.rows(from, to).copyFromBytes(file.slice(name, (long) from * size, (to - from) * size));
    }
  }

  /** Widens 16-bit floats of tensor {@code name} of {@code file} into the F32 tensor {@code dest}. */
  static void widen(SafetensorsFile file, String name, Tensor dest, Widen kind) {
    Tensor flat = flat(dest);
    int n = flat.dim(0);
    short[] in = new short[Math.min(n, CONVERT_CHUNK)];
    float[] out = new float[in.length];
    ByteBuffer scratch = ByteBuffer.allocate(in.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
    for (int from = 0; from < n; from += CONVERT_CHUNK) {
      int count = Math.min(n - from, CONVERT_CHUNK);
      ShortBuffer source = file.slice(name, (long) from * Short.BYTES, count * Short.BYTES).asShortBuffer();
      source.get(in, 0, count);
      switch (kind) {
        case BF16 -> { for (int i = 0; i < count; i++) out[i] = Float.intBitsToFloat(in[i] << 16); }
        case F16 -> { for (int i = 0; i < count; i++) out[i] = Float.float16ToFloat(in[i]); }
      }
      FloatBuffer floats = scratch.clear().asFloatBuffer();
      floats.put(out, 0, count);
      flat.rows(from, from + count).copyFromBytes(scratch.limit(count * Float.BYTES));
    }
  }

  /** A contiguous tensor's bytes as read-only views of at most {@value #COPY_CHUNK} bytes each, in order. */
  static List<ByteBuffer> chunks(Tensor source) {
    Tensor flat = flat(source);
    int size = source.dtype().byteSize();
    int n = flat.dim(0);
    int step = Math.max(1, COPY_CHUNK / size);
    List<ByteBuffer> out = new ArrayList<>();
    for (int from = 0; from < n; from += step) out.add(flat.rows(from, (int) Math.min(n, (long) from + step)).asReadOnlyBytes());
    return out;
  }
}
