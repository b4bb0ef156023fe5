package io.moemesh.model.checkpoint;

import static io.moemesh.model.checkpoint.StFiles.entry;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckpointTest {
  @TempDir Path dir;
  final TensorArena arena = TensorArena.open();

  @AfterEach
  void closeArena() {
    arena.close();
  }

  /** Writes {@code file} holding one F32 tensor per name, each {@code [i, i+1]} where i is its position. */
  Path shard(String file, String... names) {
    LinkedHashMap<String, Tensor> tensors = new LinkedHashMap<>();
    for (int i = 0; i < names.length; i++) tensors.put(names[i], arena.ofFloats(new float[] {i, i + 1}, 2));
    Path path = dir.resolve(file);
    SafetensorsWriter.write(path, tensors, Map.of());
    return path;
  }

  @Nested
  class SingleFile {
    @Test
    void opensADirectoryOrTheFileItself() {
      Path file = shard("model.safetensors", "a", "b");
      for (Path p : new Path[] {dir, file}) {
        try (Checkpoint c = Checkpoint.open(p)) {
          assertThat(c.names()).containsExactly("a", "b");
          assertThat(c.contains("b")).isTrue();
          assertThat(c.load("b", arena).toFloatArray()).containsExactly(1f, 2f);
          assertThat(c.totalBytes()).isEqualTo(16);
          assertThat(c.files()).containsExactly(file);
        }
      }
    }

    @Test
    void anUnknownTensorIsACleanError() {
      shard("model.safetensors", "a");
      try (Checkpoint c = Checkpoint.open(dir)) {
        assertThatThrownBy(() -> c.info("model.norm.weight")).isInstanceOf(CheckpointException.class)
            .hasMessageContaining(dir.toString()).hasMessageContaining("no tensor 'model.norm.weight'");
      }
    }

    @Test
    void aMissingOrEmptyDirectoryIsACleanError() {
      assertThatThrownBy(() -> Checkpoint.open(dir.resolve("nope"))).isInstanceOf(CheckpointException.class)
          .hasMessageContaining("no such checkpoint");
      assertThatThrownBy(() -> Checkpoint.open(dir)).isInstanceOf(CheckpointException.class)
          .hasMessageContaining("no model.safetensors.index.json and no *.safetensors");
    }
  }

  @Nested
  class ScannedDirectory {
    @Test
    void joinsEveryFileInNameOrder() {
      shard("b.safetensors", "y");
      shard("a.safetensors", "x", "z");
      try (Checkpoint c = Checkpoint.open(dir)) {
        assertThat(c.names()).containsExactly("x", "z", "y");
        assertThat(c.load("z", arena).toFloatArray()).containsExactly(1f, 2f);
      }
    }

    @Test
    void aNameInTwoFilesIsAnError() {
      shard("a.safetensors", "x");
      shard("b.safetensors", "x");
      assertThatThrownBy(() -> Checkpoint.open(dir)).isInstanceOf(CheckpointException.class)
          .hasMessageContaining("tensor 'x' is in both a.safetensors and b.safetensors");
    }
  }

  @Nested
  class Sharded {
    void index(Map<String, String> weightMap) {
      new ShardIndex(weightMap, 24).write(dir);
    }

    @Test
    void loadsThroughTheIndex() {
      shard(ShardIndex.shardFileName(0, 2), "a", "b");
      shard(ShardIndex.shardFileName(1, 2), "c", "unmapped");
      index(Map.of("c", "model-00002-of-00002.safetensors", "a", "model-00001-of-00002.safetensors",
          "b", "model-00001-of-00002.safetensors"));

      try (Checkpoint c = Checkpoint.open(dir)) {
        assertThat(c.names()).containsExactly("a", "b", "c");
        assertThat(c.contains("unmapped")).isFalse();
        assertThat(c.load("c", arena).toFloatArray()).containsExactly(0f, 1f);
        assertThat(c.files()).hasSize(2);
      }
    }

    @Test
    void aMissingShardIsAnError() {
      shard(ShardIndex.shardFileName(0, 2), "a");
      index(Map.of("a", "model-00001-of-00002.safetensors", "b", "model-00002-of-00002.safetensors"));
      assertThatThrownBy(() -> Checkpoint.open(dir)).isInstanceOf(CheckpointException.class)
          .hasMessageContaining("shard 'model-00002-of-00002.safetensors' does not exist");
    }

    @Test
    void aTensorAbsentFromItsShardIsAnError() {
      shard("s1.safetensors", "a");
      shard("s2.safetensors", "b");
      index(Map.of("a", "s1.safetensors", "b", "s1.safetensors"));
      assertThatThrownBy(() -> Checkpoint.open(dir)).isInstanceOf(CheckpointException.class)
          .hasMessageContaining("tensor 'b' is mapped to s1.safetensors, which does not contain it");
    }

    @Test
    void aShardOutsideTheDirectoryIsAnError() {
      index(Map.of("a", "../elsewhere.safetensors"));
      assertThatThrownBy(() -> Checkpoint.open(dir)).isInstanceOf(CheckpointException.class).hasMessageContaining("lies outside");
    }

    @Test
    void aMalformedIndexIsAnError() throws IOException {
      Files.writeString(dir.resolve(ShardIndex.FILE_NAME), "{\"weight_map\": {\"a\": 3}}");
      assertThatThrownBy(() -> Checkpoint.open(dir)).isInstanceOf(CheckpointException.class)
          .hasMessageContaining("weight_map entry 'a' must name a shard file");
      Files.writeString(dir.resolve(ShardIndex.FILE_NAME), "{\"metadata\": {}}");
      assertThatThrownBy(() -> Checkpoint.open(dir)).isInstanceOf(CheckpointException.class)
          .hasMessageContaining("'weight_map' must be an object");
    }

    @Test
    void theIndexIsWrittenDeterministicallyAndReadsBack() throws IOException {
      ShardIndex index = new ShardIndex(Map.of("b", "s2.safetensors", "a", "s1.safetensors"), 1234);
      index.write(dir);
      assertThat(Files.readString(dir.resolve(ShardIndex.FILE_NAME))).isEqualTo("""
          {
            "metadata": {
              "total_size": 1234
            },
            "weight_map": {
              "a": "s1.safetensors",
              "b": "s2.safetensors"
            }
          }
          """);
      assertThat(ShardIndex.read(dir.resolve(ShardIndex.FILE_NAME))).isEqualTo(index);
      assertThat(ShardIndex.shardFileName(2, 163)).isEqualTo("model-00003-of-00163.safetensors");
    }
  }

  @Nested
  class Conversion {
    @Test
    void bf16WidensToF32ExactlyForEveryBitPattern() {
      StFiles.write(dir.resolve("model.safetensors"), "{" + entry("w", "BF16", "[256,256]", 0, 131072) + "}",
          StFiles.shorts(65536, i -> i));
      try (Checkpoint c = Checkpoint.open(dir)) {
        Tensor f32 = arena.allocate(DType.F32, 256, 256);
        c.readInto("w", f32);
        for (int i = 0; i < 65536; i++) assertSameFloat(f32.getFloat(i), Float.intBitsToFloat(i << 16), i);
        Tensor bf16 = c.load("w", arena);
        assertThat(bf16.dtype()).isEqualTo(DType.BF16);
        for (int i = 0; i < 65536; i += 257) assertSameFloat(bf16.getFloat(i), f32.getFloat(i), i);
      }
    }

    @Test
    void f16LoadsAsF32ExactlyForEveryBitPattern() {
      StFiles.write(dir.resolve("model.safetensors"), "{" + entry("w", "F16", "[65536]", 0, 131072) + "}",
          StFiles.shorts(65536, i -> i));
      try (Checkpoint c = Checkpoint.open(dir)) {
        Tensor loaded = c.load("w", arena);
        assertThat(loaded.dtype()).isEqualTo(DType.F32);
        for (int i = 0; i < 65536; i++) assertSameFloat(loaded.getFloat(i), halfToFloat(i), i);
      }
    }

    @Test
    void otherDtypePairsAreRefused() {
      shard("model.safetensors", "f32");
      try (Checkpoint c = Checkpoint.open(dir)) {
        assertThatThrownBy(() -> c.readInto("f32", arena.allocate(DType.BF16, 2))).isInstanceOf(CheckpointException.class)
            .hasMessageContaining("tensor 'f32' is F32 and cannot be read into BF16(2)");
      }
    }

    @Test
    void unloadableDtypesAreRefusedByName() {
      String json = "{" + entry("ids", "I64", "[1]", 0, 8) + "," + entry("mask", "BOOL", "[2]", 8, 10) + "}";
      StFiles.write(dir.resolve("model.safetensors"), json, new byte[10]);
      try (Checkpoint c = Checkpoint.open(dir)) {
        assertThat(c.info("ids").dtype()).isEqualTo(StDType.I64);
        assertThatThrownBy(() -> c.load("ids", arena)).isInstanceOf(CheckpointException.class)
            .hasMessageContaining("tensor 'ids' has dtype I64, which cannot be loaded");
        assertThatThrownBy(() -> c.load("mask", arena)).hasMessageContaining("dtype BOOL");
      }
    }

    /** An independent IEEE binary16 decoder. */
    static float halfToFloat(int bits) {
      int exponent = (bits >>> 10) & 0x1F;
      int mantissa = bits & 0x3FF;
      double magnitude = exponent == 0x1F ? (mantissa == 0 ? Double.POSITIVE_INFINITY : Double.NaN)
          : exponent == 0 ? mantissa * Math.pow(2, -24)
          : (1 + mantissa / 1024.0) * Math.pow(2, exponent - 15);
      return (float) ((bits & 0x8000) != 0 ? -magnitude : magnitude);
    }

    static void assertSameFloat(float actual, float expected, int pattern) {
      if (Float.isNaN(expected)) assertThat(actual).as("pattern %04x", pattern).isNaN();
      else assertThat(Float.floatToRawIntBits(actual)).as("pattern %04x", pattern).isEqualTo(Float.floatToRawIntBits(expected));
    }
  }

  @Nested
  class ReadInto {
    @Test
    void copiesIntoAnExistingTensorOfTheSameShape() {
      shard("model.safetensors", "a", "b");
      try (Checkpoint c = Checkpoint.open(dir)) {
        Tensor dest = arena.allocate(DType.F32, 2);
        c.readInto("b", dest);
        assertThat(dest.toFloatArray()).containsExactly(1f, 2f);
      }
    }

    @Test
    void aShapeMismatchNamesBothShapes() {
      shard("model.safetensors", "a");
      try (Checkpoint c = Checkpoint.open(dir)) {
        assertThatThrownBy(() -> c.readInto("a", arena.allocate(DType.F32, 1, 2))).isInstanceOf(CheckpointException.class)
            .hasMessageContaining("tensor 'a' has shape (2), but the destination is F32(1, 2)");
      }
    }

    @Test
    void aStridedDestinationIsRefused() {
      StFiles.write(dir.resolve("model.safetensors"), "{" + entry("w", "F32", "[2,2]", 0, 16) + "}", new byte[16]);
      try (Checkpoint c = Checkpoint.open(dir)) {
        Tensor strided = arena.allocate(DType.F32, 2, 4).cols(0, 2);
        assertThatThrownBy(() -> c.readInto("w", strided)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("non-contiguous");
      }
    }

    @Test
    void dimensionsBeyondAnIntAreRefusedOnLoad() {
      StFiles.write(dir.resolve("model.safetensors"), "{" + entry("w", "F32", "[0,4294967296]", 0, 0) + "}", new byte[0]);
      try (Checkpoint c = Checkpoint.open(dir)) {
        assertThat(c.info("w").numElements()).isZero();
        assertThatThrownBy(() -> c.load("w", arena)).isInstanceOf(CheckpointException.class)
            .hasMessageContaining("dimension 1 is too large to load");
      }
    }
  }
}
