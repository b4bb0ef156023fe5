package io.moemesh.cli;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

/** Writes NumPy {@code .npy} version 1.0 files: float32 little-endian, C order. */
final class Npy {
  private Npy() {}

  /** Writes {@code rows} (each of length {@code cols}) as an array of shape (rows.size(), cols). */
  static void writeFloat32(Path file, List<float[]> rows, int cols) throws IOException {
    String dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + rows.size() + ", " + cols + "), }";
    int unpadded = 10 + dict.length() + 1; // magic(6) + version(2) + length(2) + dict + '\n'
    int padding = (64 - unpadded % 64) % 64;
    String header = dict + " ".repeat(padding) + "\n";
    ByteBuffer head = ByteBuffer.allocate(10 + header.length()).order(ByteOrder.LITTLE_ENDIAN);
    head.put((byte) 0x93).put("NUMPY".getBytes(StandardCharsets.US_ASCII)).put((byte) 1).put((byte) 0);
    head.putShort((short) header.length()).put(header.getBytes(StandardCharsets.US_ASCII)).flip();
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
      ch.write(head);
      ByteBuffer row = ByteBuffer.allocate(cols * 4).order(ByteOrder.LITTLE_ENDIAN);
      for (float[] r : rows) {
        if (r.length != cols) throw new IllegalArgumentException("row of " + r.length + " values, expected " + cols);
        row.clear();
        row.asFloatBuffer().put(r);
        row.limit(cols * 4);
        while (row.hasRemaining()) ch.write(row);
      }
    }
  }
}
