package io.moemesh.model.checkpoint;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Hand-made safetensors bytes for tests: any header, valid or not, and any data. */
final class StFiles {
  private StFiles() {}

  /** An 8-byte little-endian {@code length}, then {@code header}, then {@code data}. */
  static byte[] bytes(long length, byte[] header, byte[] data) {
    return ByteBuffer.allocate(8 + header.length + data.length).order(ByteOrder.LITTLE_ENDIAN)
        .putLong(length).put(header).put(data).array();
  }

  static byte[] bytes(byte[] header, byte[] data) {
    return bytes(header.length, header, data);
  }

  static byte[] bytes(String json, byte[] data) {
    return bytes(json.getBytes(StandardCharsets.UTF_8), data);
  }

  static Path write(Path file, byte[] bytes) {
    try {
      return Files.write(file, bytes);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static Path write(Path file, String json, byte[] data) {
    return write(file, bytes(json, data));
  }

  /** A header entry: {@code "name":{"dtype":...,"shape":[...],"data_offsets":[begin,end]}}. */
  static String entry(String name, String dtype, String shape, long begin, long end) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" + begin + "," + end + "]}";
  }

  /** 16-bit values as little-endian bytes. */
  static byte[] shorts(int count, java.util.function.IntUnaryOperator value) {
    ByteBuffer b = ByteBuffer.allocate(count * 2).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < count; i++) b.putShort((short) value.applyAsInt(i));
    return b.array();
  }
}
