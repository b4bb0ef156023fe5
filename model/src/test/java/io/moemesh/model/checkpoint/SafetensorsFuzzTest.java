package io.moemesh.model.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Seeded random mutations of valid safetensors files and indexes. Each case must either open (and then every
 * load succeeds or throws {@link CheckpointException}) or be refused with a {@link CheckpointException}: never
 * another exception, never a crash. A failure names the case's seed; {@link FuzzFiles} rebuilds it.
 */
class SafetensorsFuzzTest {
  static final long SEED = 0x5AFE_7E45_0000L;
  @TempDir Path dir;

  enum Outcome { OPENED, REJECTED }

  /** Opens {@code path} and loads every tensor; anything but a CheckpointException fails the test. */
  static Outcome exercise(Path path, String what) {
    try (Checkpoint checkpoint = Checkpoint.open(path); TensorArena arena = TensorArena.open()) {
      for (String name : checkpoint.names()) {
        try {
          Tensor t = checkpoint.load(name, arena);
          assertThat(t.numElements()).isEqualTo(checkpoint.info(name).numElements());
        } catch (CheckpointException expected) {
          assertThat(expected.getMessage()).isNotBlank();
        }
      }
      return Outcome.OPENED;
    } catch (CheckpointException expected) {
      assertThat(expected.getMessage()).contains(path.toString());
      return Outcome.REJECTED;
    } catch (Throwable unexpected) {
      return fail(what + " threw " + unexpected, unexpected);
    }
  }

  @Nested
  class MutatedFiles {
    @Test
    void everyMutationOpensOrFailsWithACheckpointException() throws IOException {
      Map<FuzzFiles.Mutation, int[]> outcomes = new EnumMap<>(FuzzFiles.Mutation.class);
      int cases = 3000;
      for (int i = 0; i < cases; i++) {
        long seed = SEED + i;
        FuzzFiles.Case c = FuzzFiles.generate(seed);
        Path file = Files.write(dir.resolve("case" + i + ".safetensors"), c.bytes()); // new files: overwriting is slow on ext4
        Outcome o = exercise(file, "case seed=" + seed + " mutation=" + c.mutation());
        outcomes.computeIfAbsent(c.mutation(), m -> new int[2])[o.ordinal()]++;
      }
      // Every mutation kind was tried, and the mutations that must break a file did so.
      assertThat(outcomes).hasSize(FuzzFiles.Mutation.values().length);
      assertThat(outcomes.get(FuzzFiles.Mutation.NONE)[Outcome.REJECTED.ordinal()]).isZero();
      for (FuzzFiles.Mutation m : List.of(FuzzFiles.Mutation.OVERLAP, FuzzFiles.Mutation.PAST_EOF, FuzzFiles.Mutation.SHAPE_MISMATCH,
          FuzzFiles.Mutation.UNKNOWN_DTYPE, FuzzFiles.Mutation.DUPLICATE_KEY, FuzzFiles.Mutation.NON_UTF8))
        assertThat(outcomes.get(m)[Outcome.OPENED.ordinal()]).as(m.name()).isZero();
      int opened = outcomes.values().stream().mapToInt(a -> a[0]).sum();
      assertThat(opened).isBetween(cases / 20, cases / 2);
    }

    @Test
    void unmutatedFilesLoadTheirExactBytes() throws IOException {
      for (int i = 0; i < 50; i++) {
        FuzzFiles.Case c = FuzzFiles.valid(SEED + i);
        Path file = Files.write(dir.resolve("valid" + i + ".safetensors"), c.bytes());
        try (Checkpoint checkpoint = Checkpoint.open(file); TensorArena arena = TensorArena.open();
            SafetensorsFile st = SafetensorsFile.open(file)) {
          for (String name : checkpoint.names()) {
            StDType dtype = checkpoint.info(name).dtype();
            if (dtype == StDType.F16 || dtype == StDType.I64 || dtype == StDType.U8 || dtype == StDType.BOOL) continue;
            ByteBuffer loaded = checkpoint.load(name, arena).asReadOnlyBytes();
            assertThat(loaded).as("seed %d tensor %s", SEED + i, name).isEqualTo(st.bytes(name));
          }
        }
      }
    }
  }

  @Nested
  class MutatedIndexes {
    @Test
    void everyMutatedIndexOpensOrFailsWithACheckpointException() throws IOException {
      SafetensorsWriter.write(dir.resolve("s1.safetensors"), new java.util.LinkedHashMap<>(), Map.of());
      Path shard = dir.resolve("s2.safetensors");
      Files.write(shard, FuzzFiles.valid(SEED).bytes());
      List<String> names;
      try (SafetensorsFile st = SafetensorsFile.open(shard)) {
        names = new ArrayList<>(st.names());
      }
      String[] values = {"\"s1.safetensors\"", "\"s2.safetensors\"", "\"missing.safetensors\"", "\"../s2.safetensors\"",
          "\"/etc/passwd\"", "\"\"", "\".\"", "1", "null", "[]", "{}", "\"s2.safetensors\\u0000\""};
      int opened = 0;
      for (int i = 0; i < 800; i++) {
        Random r = new Random(SEED ^ i);
        StringBuilder json = new StringBuilder("{\"metadata\":{\"total_size\":" + r.nextLong() + "},\"weight_map\":{");
        int n = r.nextInt(names.size() + 2);
        for (int k = 0; k < n; k++) {
          String name = r.nextInt(8) == 0 ? "nope" + r.nextInt(3) : names.get(r.nextInt(names.size()));
          String value = r.nextInt(3) == 0 ? values[r.nextInt(values.length)] : "\"s2.safetensors\"";
          json.append(k == 0 ? "" : ",").append(FuzzFiles.jsonString(name)).append(':').append(value);
        }
        json.append("}}");
        byte[] bytes = FuzzFiles.splice(json.toString().getBytes(StandardCharsets.UTF_8), r, r.nextInt(4) == 0 ? 1 : 0);
        Path caseDir = Files.createDirectory(dir.resolve("case" + i));
        Files.createLink(caseDir.resolve("s1.safetensors"), dir.resolve("s1.safetensors"));
        Files.createLink(caseDir.resolve("s2.safetensors"), shard);
        Files.write(caseDir.resolve(ShardIndex.FILE_NAME), bytes);
        if (exercise(caseDir, "index seed=" + (SEED ^ i) + " json=" + new String(bytes, StandardCharsets.UTF_8)) == Outcome.OPENED) opened++;
      }
      assertThat(opened).isPositive();
    }
  }

  @Nested
  class RandomBytes {
    @Test
    void areRefused() throws IOException {
      Random r = new Random(SEED);
      for (int i = 0; i < 500; i++) {
        Path file = dir.resolve("garbage" + i + ".safetensors");
        byte[] bytes = new byte[r.nextInt(64)];
        r.nextBytes(bytes);
        if (bytes.length >= 8 && r.nextBoolean())
          ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putLong(0, r.nextInt(bytes.length - 7));
        Files.write(file, bytes);
        assertThat(exercise(file, "garbage " + Arrays.toString(bytes))).isEqualTo(Outcome.REJECTED);
      }
    }
  }
}
