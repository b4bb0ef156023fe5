package io.moemesh.model.checkpoint;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moemesh.kernels.Tensor;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Streams one {@code .safetensors} file to disk without holding its tensors in memory: {@link #create} fixes the
 * header from the specs (data in list order, offsets packed, {@code __metadata__} first with sorted keys, JSON
 * padded with spaces to a multiple of 8 bytes as the reference implementation does), then {@link #write} takes
 * each tensor in that order. Data goes to {@code <file>.tmp}, which {@link #close()} renames to {@code file} once
 * every tensor is written, so a reader never sees a half-written file. Same inputs, same bytes.
 */
public final class SafetensorsWriter implements AutoCloseable {
  private final Path file;
  private final Path temp;
  private final List<TensorSpec> specs;
  private final FileChannel channel;
  private int next; // index of the next spec to write
  private boolean closed;

  private SafetensorsWriter(Path file, Path temp, List<TensorSpec> specs, FileChannel channel) {
    this.file = file;
    this.temp = temp;
    this.specs = specs;
    this.channel = channel;
  }

  /** Starts {@code file} with a header for {@code specs} (names unique) and {@code metadata} (may be empty). */
  public static SafetensorsWriter create(Path file, List<TensorSpec> specs, Map<String, String> metadata) {
    byte[] header = header(specs, metadata);
    Path temp = file.resolveSibling(file.getFileName() + ".tmp");
    FileChannel channel = null;
    try {
      channel = FileChannel.open(temp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
      SafetensorsWriter writer = new SafetensorsWriter(file, temp, List.copyOf(specs), channel);
      writer.writeFully(ByteBuffer.allocate(Long.BYTES).order(ByteOrder.LITTLE_ENDIAN).putLong(0, header.length));
      writer.writeFully(ByteBuffer.wrap(header));
      return writer;
    } catch (IOException e) {
      try {
        if (channel != null) channel.close();
      } catch (IOException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw new CheckpointException(temp + ": cannot write: " + e, e);
    }
  }

  /** Writes {@code tensors} (in map order) to {@code file} in one go. */
  public static void write(Path file, LinkedHashMap<String, Tensor> tensors, Map<String, String> metadata) {
    List<TensorSpec> specs = tensors.entrySet().stream().map(e -> TensorSpec.of(e.getKey(), e.getValue())).toList();
    try (SafetensorsWriter writer = create(file, specs, metadata)) {
      tensors.forEach(writer::write);
    }
  }

  /** Writes the next tensor; {@code name}, dtype and shape must match the next spec, and it must be contiguous. */
  public void write(String name, Tensor tensor) {
    if (closed) throw new IllegalStateException(file + ": writer is closed");
    if (next == specs.size())
      throw new IllegalStateException(file + ": all " + specs.size() + " tensors are written; got another, " + name);
    TensorSpec spec = specs.get(next);
    if (!spec.name().equals(name))
      throw new IllegalArgumentException(file + ": expected tensor " + spec.name() + " next, got " + name);
    if (!spec.matches(tensor))
      throw new IllegalArgumentException(file + ": tensor " + name + " must be " + spec + ", got " + tensor);
    if (!tensor.isContiguous())
      throw new IllegalArgumentException(file + ": tensor " + name + " is a strided view " + tensor + "; copy it first");
    try {
      for (ByteBuffer chunk : TensorCopy.chunks(tensor)) writeFully(chunk);
    } catch (IOException e) {
      throw new CheckpointException(temp + ": cannot write: " + e, e);
    }
    next++;
  }

  /**
   * Finishes the file: renames it into place when every spec was written; otherwise deletes it and throws an
   * {@link IllegalStateException} naming the first missing tensor. Idempotent.
   */
  @Override
  public void close() {
    if (closed) return;
    closed = true;
    try {
      if (next < specs.size()) {
        channel.close();
        Files.deleteIfExists(temp);
        throw new IllegalStateException(file + ": closed with " + (specs.size() - next)
            + " tensors unwritten, from " + specs.get(next).name());
      }
      channel.force(false);
      channel.close();
      Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new CheckpointException(file + ": cannot finish: " + e, e);
    }
  }

  /** The header JSON: UTF-8, padded with spaces to a multiple of 8 bytes. */
  static byte[] header(List<TensorSpec> specs, Map<String, String> metadata) {
    ObjectNode root = Json.MAPPER.createObjectNode();
    if (!metadata.isEmpty()) {
      ObjectNode meta = root.putObject(SafetensorsHeader.METADATA_KEY);
      new TreeMap<>(metadata).forEach(meta::put);
    }
    Set<String> seen = new HashSet<>();
    long offset = 0;
    for (TensorSpec spec : specs) {
      if (!seen.add(spec.name())) throw new IllegalArgumentException("tensor " + spec.name() + " is listed twice");
      ObjectNode entry = root.putObject(spec.name());
      entry.put("dtype", StDType.of(spec.dtype()).name());
      ArrayNode shape = entry.putArray("shape");
      for (int d : spec.shape()) shape.add(d);
      long end = Math.addExact(offset, spec.byteLength());
      entry.putArray("data_offsets").add(offset).add(end);
      offset = end;
    }
    byte[] json;
    try {
      json = Json.MAPPER.writeValueAsBytes(root);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot serialize a header", e);
    }
    byte[] padded = Arrays.copyOf(json, (json.length + 7) / 8 * 8);
    Arrays.fill(padded, json.length, padded.length, (byte) ' ');
    return padded;
  }

  private void writeFully(ByteBuffer buffer) throws IOException {
    while (buffer.hasRemaining()) channel.write(buffer);
  }
}
