package io.moemesh.model.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class SafetensorsWriterTest {
  @TempDir Path dir;
  final TensorArena arena = TensorArena.open();

  @AfterEach
  void closeArena() {
    arena.close();
  }

  /** A tensor filled with seeded random bytes (any bit pattern, NaNs included). */
  Tensor random(DType dtype, long seed, int... shape) {
    Tensor t = arena.allocate(dtype, shape);
    byte[] bytes = new byte[Math.toIntExact(t.numElements() * dtype.byteSize())];
    new Random(seed).nextBytes(bytes);
    t.copyFromBytes(ByteBuffer.wrap(bytes));
    return t;
  }

  static byte[] bytesOf(Tensor t) {
    ByteBuffer b = t.asReadOnlyBytes();
    byte[] out = new byte[b.remaining()];
    b.get(out);
    return out;
  }

  @Nested
  class RoundTrip {
    @ParameterizedTest
    @EnumSource(DType.class)
    void everyDTypeComesBackBitExact(DType dtype) {
      Tensor original = random(dtype, dtype.ordinal(), 3, 5, 7);
      Path file = dir.resolve("model.safetensors");
      SafetensorsWriter.write(file, new LinkedHashMap<>(Map.of("w", original)), Map.of());

      try (Checkpoint checkpoint = Checkpoint.open(dir)) {
        assertThat(checkpoint.info("w")).isEqualTo(new TensorInfo("w", StDType.of(dtype), new long[] {3, 5, 7}, 105L * dtype.byteSize()));
        Tensor loaded = checkpoint.load("w", arena);
        assertThat(loaded.dtype()).isEqualTo(dtype);
        assertThat(loaded.shape()).containsExactly(3, 5, 7);
        assertThat(bytesOf(loaded)).isEqualTo(bytesOf(original));
      }
    }

    @Test
    void fp8KeepsAll256BytePatterns() {
      Tensor fp8 = arena.allocate(DType.F8_E4M3, 16, 16);
      for (int i = 0; i < 256; i++) fp8.setByte(i, (byte) i);
      SafetensorsWriter.write(dir.resolve("model.safetensors"), new LinkedHashMap<>(Map.of("w", fp8)), Map.of());

      try (Checkpoint checkpoint = Checkpoint.open(dir)) {
        Tensor loaded = checkpoint.load("w", arena);
        for (int i = 0; i < 256; i++) assertThat(loaded.getByte(i)).isEqualTo((byte) i);
      }
    }

    @Test
    void scalarsAndEmptyTensorsSurvive() {
      LinkedHashMap<String, Tensor> tensors = new LinkedHashMap<>();
      tensors.put("scalar", arena.ofFloats(new float[] {42.5f}));
      tensors.put("empty", arena.allocate(DType.BF16, 0, 4));
      tensors.put("emptyTail", arena.allocate(DType.I32, 4, 0));
      SafetensorsWriter.write(dir.resolve("model.safetensors"), tensors, Map.of());

      try (Checkpoint checkpoint = Checkpoint.open(dir)) {
        assertThat(checkpoint.load("scalar", arena).getFloat(0)).isEqualTo(42.5f);
        assertThat(checkpoint.load("empty", arena).shape()).containsExactly(0, 4);
        assertThat(checkpoint.load("emptyTail", arena).shape()).containsExactly(4, 0);
      }
    }

    @Test
    void metadataAndTensorOrderSurvive() {
      LinkedHashMap<String, Tensor> tensors = new LinkedHashMap<>();
      for (String name : List.of("z", "a", "m")) tensors.put(name, random(DType.BF16, name.hashCode(), 2, 3));
      Path file = dir.resolve("model.safetensors");
      SafetensorsWriter.write(file, tensors, Map.of("format", "pt", "seed", "7"));

      try (SafetensorsFile st = SafetensorsFile.open(file)) {
        assertThat(st.metadata()).containsExactly(Map.entry("format", "pt"), Map.entry("seed", "7"));
        assertThat(st.names()).containsExactly("z", "a", "m");
        assertThat(st.bytes("a").order()).isEqualTo(ByteOrder.LITTLE_ENDIAN);
        assertThat(st.bytes("a").isReadOnly()).isTrue();
      }
    }
  }

  @Nested
  class FileLayout {
    @Test
    void matchesTheReferenceImplementationByteForByte() throws IOException {
      // safetensors' own test vector: serialize({"test": zeros((2, 2), I32)})
      Path file = dir.resolve("t.safetensors");
      SafetensorsWriter.write(file, new LinkedHashMap<>(Map.of("test", arena.allocate(DType.I32, 2, 2))), Map.of());

      String json = "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}";
      String padded = json + " ".repeat((8 - json.length() % 8) % 8);
      assertThat(Files.readAllBytes(file)).isEqualTo(StFiles.bytes(padded, new byte[16]));
    }

    @Test
    void headerIsPaddedWithSpacesToAMultipleOfEight() throws IOException {
      for (int nameLength = 1; nameLength <= 8; nameLength++) {
        Path file = dir.resolve(nameLength + ".safetensors");
        SafetensorsWriter.write(file, new LinkedHashMap<>(Map.of("x".repeat(nameLength), arena.allocate(DType.I8, 3))),
            Map.of());
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        long headerLength = b.getLong(0);
        assertThat(headerLength % 8).isZero();
        assertThat(b.capacity()).isEqualTo(8 + headerLength + 3);
        String header = new String(b.array(), 8, (int) headerLength, StandardCharsets.UTF_8);
        assertThat(header.stripTrailing()).endsWith("}");
      }
    }

    @Test
    void sameInputsGiveSameBytes() throws IOException {
      Map<String, String> meta1 = new LinkedHashMap<>();
      meta1.put("b", "2");
      meta1.put("a", "1");
      Map<String, String> meta2 = new HashMap<>(Map.of("a", "1", "b", "2"));
      LinkedHashMap<String, Tensor> tensors = new LinkedHashMap<>();
      tensors.put("w", random(DType.BF16, 1, 4, 4));
      tensors.put("s", random(DType.F32, 2, 4));
      SafetensorsWriter.write(dir.resolve("1.safetensors"), tensors, meta1);
      SafetensorsWriter.write(dir.resolve("2.safetensors"), tensors, meta2);

      assertThat(Files.readAllBytes(dir.resolve("1.safetensors"))).isEqualTo(Files.readAllBytes(dir.resolve("2.safetensors")));
    }

    @Test
    void streamsTensorsInSpecOrderWithPackedOffsets() {
      Path file = dir.resolve("s.safetensors");
      List<TensorSpec> specs = List.of(new TensorSpec("a", DType.F32, new int[] {3}), new TensorSpec("b", DType.I8, new int[] {5}),
          new TensorSpec("c", DType.BF16, new int[] {2, 2}));
      try (SafetensorsWriter writer = SafetensorsWriter.create(file, specs, Map.of())) {
        writer.write("a", arena.ofFloats(new float[] {1, 2, 3}, 3));
        writer.write("b", arena.allocate(DType.I8, 5));
        assertThat(file).doesNotExist(); // still being written under a temporary name
        writer.write("c", arena.allocate(DType.BF16, 2, 2));
      }
      assertThat(file.toFile().length()).isEqualTo(8 + headerLength(file) + 12 + 5 + 8);
      try (SafetensorsFile st = SafetensorsFile.open(file)) {
        assertThat(st.names()).containsExactly("a", "b", "c");
        assertThat(st.bytes("a").getFloat(8)).isEqualTo(3f);
      }
    }

    private static long headerLength(Path file) {
      try {
        return ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }
  }

  @Nested
  class WriterContract {
    final List<TensorSpec> specs = List.of(new TensorSpec("a", DType.F32, new int[] {4, 4}), new TensorSpec("b", DType.BF16, new int[] {2}));

    @Test
    void rejectsAStridedSource() {
      Tensor columns = arena.allocate(DType.F32, 4, 8).cols(0, 4);
      try (SafetensorsWriter writer = SafetensorsWriter.create(dir.resolve("x.safetensors"), specs, Map.of())) {
        assertThatThrownBy(() -> writer.write("a", columns)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("strided");
        writer.write("a", arena.allocate(DType.F32, 4, 4));
        writer.write("b", arena.allocate(DType.BF16, 2));
      }
    }

    @Test
    void rejectsTensorsOutOfOrderOrOfTheWrongKind() {
      try (SafetensorsWriter writer = SafetensorsWriter.create(dir.resolve("x.safetensors"), specs, Map.of())) {
        assertThatThrownBy(() -> writer.write("b", arena.allocate(DType.BF16, 2))).hasMessageContaining("expected tensor a next");
        assertThatThrownBy(() -> writer.write("a", arena.allocate(DType.BF16, 4, 4))).hasMessageContaining("must be a: F32(4, 4)");
        assertThatThrownBy(() -> writer.write("a", arena.allocate(DType.F32, 16))).hasMessageContaining("must be a: F32(4, 4)");
        writer.write("a", arena.allocate(DType.F32, 4, 4));
        writer.write("b", arena.allocate(DType.BF16, 2));
        assertThatThrownBy(() -> writer.write("c", arena.allocate(DType.BF16, 2))).isInstanceOf(IllegalStateException.class);
      }
    }

    @Test
    void closeFailsAndLeavesNoFileWhenTensorsAreMissing() {
      Path file = dir.resolve("x.safetensors");
      SafetensorsWriter writer = SafetensorsWriter.create(file, specs, Map.of());
      writer.write("a", arena.allocate(DType.F32, 4, 4));

      assertThatThrownBy(writer::close).isInstanceOf(IllegalStateException.class).hasMessageContaining("unwritten, from b");
      assertThat(file).doesNotExist();
      assertThat(dir.resolve("x.safetensors.tmp")).doesNotExist();
    }

    @Test
    void rejectsDuplicateAndReservedNames() {
      List<TensorSpec> twice = List.of(specs.get(0), specs.get(0));
      assertThatThrownBy(() -> SafetensorsWriter.create(dir.resolve("x.safetensors"), twice, Map.of()))
          .hasMessageContaining("listed twice");
      assertThatThrownBy(() -> new TensorSpec("__metadata__", DType.F32, new int[] {1})).hasMessageContaining("reserved");
      assertThatThrownBy(() -> new TensorSpec("", DType.F32, new int[] {1})).hasMessageContaining("non-empty");
      assertThat(Arrays.asList(dir.toFile().list())).isEmpty();
    }
  }
}
