package io.moemesh.model.checkpoint;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.Set;

/**
 * One {@code .safetensors} file, memory-mapped read-only: an 8-byte little-endian header length {@code N}, an
 * {@code N}-byte UTF-8 JSON header ({@code {"__metadata__": {...}, name: {dtype, shape, data_offsets}, ...}}),
 * then the data section that {@code data_offsets} index into. The header is fully validated on open (see
 * {@link SafetensorsHeader}); any violation is a {@link CheckpointException} naming the file and the field.
 *
 * <p>Thread-safe for reading. {@link #close()} unmaps the file; buffers handed out earlier then fail with an
 * {@link IllegalStateException} instead of reading freed memory. (As with any mapping, another process
 * truncating the file while it is open is not survivable.)
 */
public final class SafetensorsFile implements AutoCloseable {
  private static final ValueLayout.OfLong LENGTH = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  private final Path path;
  private final Arena arena;
  private final MemorySegment data; // the data section only
  private final SafetensorsHeader header;

  private SafetensorsFile(Path path, Arena arena, MemorySegment data, SafetensorsHeader header) {
    this.path = path;
    this.arena = arena;
    this.data = data;
    this.header = header;
  }

  /** Maps and validates {@code path}. */
  public static SafetensorsFile open(Path path) {
    Arena arena = Arena.ofShared();
    try {
      MemorySegment file;
      try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
        long size = channel.size();
        if (size < Long.BYTES)
          throw new CheckpointException(path + ": " + size + " bytes is too short for a safetensors file (needs an 8-byte header length)");
        file = channel.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
      }
      long headerLength = file.get(LENGTH, 0);
      long available = file.byteSize() - Long.BYTES;
      if (headerLength < 0 || headerLength > SafetensorsHeader.MAX_HEADER_BYTES || headerLength > available)
        throw new CheckpointException(path + ": header length " + Long.toUnsignedString(headerLength)
            + " is out of range (file has " + available + " bytes after the length; at most "
            + SafetensorsHeader.MAX_HEADER_BYTES + " are allowed)");
      byte[] json = file.asSlice(Long.BYTES, headerLength).toArray(ValueLayout.JAVA_BYTE);
      MemorySegment data = file.asSlice(Long.BYTES + headerLength);
      SafetensorsHeader header = SafetensorsHeader.parse(path.toString(), json, data.byteSize());
      return new SafetensorsFile(path, arena, data, header);
    } catch (IOException e) {
      arena.close();
      throw new CheckpointException(path + ": cannot read: " + e, e);
    } catch (RuntimeException e) {
      arena.close();
      throw e;
    }
  }

  public Path path() { return path; }

  /** Tensor names in storage order (by offset in the data section). */
  public Set<String> names() { return header.entries().keySet(); }

  public boolean contains(String name) { return header.entries().containsKey(name); }

  /** The header's {@code __metadata__} (empty when absent), in file order. */
  public Map<String, String> metadata() { return header.metadata(); }

  public TensorInfo info(String name) { return entry(name).info(); }

  /**
   * The tensor's raw bytes as a read-only little-endian view of the mapping (not aligned, not a copy). Tensors
   * of 2 GiB or more do not fit one {@link ByteBuffer}: read those with {@link Checkpoint#load}.
   */
  public ByteBuffer bytes(String name) {
    TensorInfo info = info(name);
    if (info.byteLength() > Integer.MAX_VALUE)
      throw new CheckpointException(path + ": tensor " + Json.quote(name) + " (" + info.byteLength()
          + " bytes) is too large for one ByteBuffer");
    return slice(name, 0, (int) info.byteLength());
  }

  /** {@code length} bytes of tensor {@code name} from byte {@code from} of that tensor. */
  ByteBuffer slice(String name, long from, int length) {
    SafetensorsHeader.Entry e = entry(name);
    if (from < 0 || length < 0 || from + length > e.info().byteLength())
      throw new IndexOutOfBoundsException("bytes [" + from + ", " + (from + length) + ") of " + e.info());
    if (!arena.scope().isAlive()) throw new IllegalStateException(path + " is closed");
    return data.asSlice(e.begin() + from, length).asByteBuffer().asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
  }

  private SafetensorsHeader.Entry entry(String name) {
    SafetensorsHeader.Entry e = header.entries().get(name);
    if (e == null) throw new CheckpointException(path + ": no tensor " + Json.quote(name));
    return e;
  }

  /** Unmaps the file; idempotent. */
  @Override
  public synchronized void close() {
    if (arena.scope().isAlive()) arena.close();
  }

  @Override
  public String toString() {
    return "SafetensorsFile[" + path + ", " + header.entries().size() + " tensors]";
  }
}
