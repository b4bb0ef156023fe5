package io.moemesh.model.checkpoint;

import static io.moemesh.model.checkpoint.StFiles.entry;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SafetensorsFileTest {
  @TempDir Path dir;

  Path file(String json, int dataBytes) {
    return StFiles.write(dir.resolve("bad.safetensors"), json, new byte[dataBytes]);
  }

  static AbstractThrowableAssert<?, ? extends Throwable> assertRejected(Path file) {
    return assertThatThrownBy(() -> SafetensorsFile.open(file).close())
        .isInstanceOf(CheckpointException.class)
        .hasMessageContaining(file.toString());
  }

  @Nested
  class Accepts {
    @Test
    void everyHeaderDType() {
      String[] dtypes = {"BF16", "F16", "F32", "F8_E4M3", "I8", "I32", "I64", "U8", "BOOL"};
      StringBuilder json = new StringBuilder("{");
      long offset = 0;
      for (String dt : dtypes) {
        long size = 2L * StDType.valueOf(dt).byteSize();
        json.append(offset == 0 ? "" : ",").append(entry(dt.toLowerCase(), dt, "[2]", offset, offset + size));
        offset += size;
      }
      try (SafetensorsFile st = SafetensorsFile.open(file(json + "}", (int) offset))) {
        assertThat(st.names()).hasSize(dtypes.length);
        assertThat(st.info("i64").dtype()).isEqualTo(StDType.I64);
        assertThat(st.info("bool").byteLength()).isEqualTo(2);
      }
    }

    @Test
    void gapsZeroLengthTensorsPaddingAndUnknownFields() {
      String json = "{\"__metadata__\":null," + entry("a", "F32", "[1]", 8, 12) + "," + entry("empty", "F32", "[0,3]", 8, 8)
          + ",\"b\":{\"dtype\":\"I8\",\"shape\":[],\"data_offsets\":[0,1],\"extra\":[1,2]}}   \n";
      try (SafetensorsFile st = SafetensorsFile.open(file(json, 16))) {
        assertThat(st.names()).containsExactly("b", "empty", "a"); // storage order
        assertThat(st.metadata()).isEmpty();
        assertThat(st.info("b").rank()).isZero();
      }
    }

    @Test
    void anEmptyHeader() {
      try (SafetensorsFile st = SafetensorsFile.open(file("{}", 0))) {
        assertThat(st.names()).isEmpty();
      }
    }
  }

  @Nested
  class RejectsLength {
    @Test
    void aFileShorterThanTheLengthField() {
      assertRejected(StFiles.write(dir.resolve("short.safetensors"), new byte[5])).hasMessageContaining("too short");
    }

    @Test
    void aHeaderLengthPastTheEnd() {
      assertRejected(StFiles.write(dir.resolve("x.safetensors"), StFiles.bytes(1000, "{}".getBytes(), new byte[0])))
          .hasMessageContaining("header length 1000 is out of range");
    }

    @Test
    void aHugeOrNegativeHeaderLength() {
      assertRejected(StFiles.write(dir.resolve("x.safetensors"), StFiles.bytes(-1, "{}".getBytes(), new byte[0])))
          .hasMessageContaining("18446744073709551615");
      assertRejected(StFiles.write(dir.resolve("y.safetensors"), StFiles.bytes((100L << 20) + 1, "{}".getBytes(), new byte[0])))
          .hasMessageContaining("out of range");
    }

    @Test
    void aMissingFile() {
      assertRejected(dir.resolve("absent.safetensors")).hasMessageContaining("cannot read");
    }
  }

  @Nested
  class RejectsJson {
    @Test
    void syntaxErrorsAndTrailingGarbage() {
      assertRejected(file("{\"a\":", 0)).hasMessageContaining("not valid JSON");
      assertRejected(file("{} {}", 0)).hasMessageContaining("not valid JSON");
      assertRejected(file("", 0)).hasMessageContaining("must be a JSON object");
      assertRejected(file("[1,2]", 0)).hasMessageContaining("must be a JSON object, got array");
    }

    @Test
    void invalidUtf8() {
      byte[] header = {'{', '"', (byte) 0xC3, (byte) 0x28, '"', ':', '1', '}'};
      assertRejected(StFiles.write(dir.resolve("x.safetensors"), StFiles.bytes(header, new byte[0]))).hasMessageContaining("UTF-8");
    }

    @Test
    void duplicateKeys() {
      assertRejected(file("{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("a", "F32", "[1]", 4, 8) + "}", 8))
          .hasMessageContaining("Duplicate field 'a'");
      assertRejected(file("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4))
          .hasMessageContaining("Duplicate field 'dtype'");
    }

    @Test
    void wrongTypes() {
      assertRejected(file("{\"a\":[1]}", 0)).hasMessageContaining("tensor 'a' must be an object");
      assertRejected(file("{\"a\":{\"dtype\":1,\"shape\":[1],\"data_offsets\":[0,4]}}", 4)).hasMessageContaining("'dtype' must be a string, got number");
      assertRejected(file("{\"a\":{\"dtype\":\"F32\",\"shape\":\"1\",\"data_offsets\":[0,4]}}", 4)).hasMessageContaining("'shape' must be an array");
      assertRejected(file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4)).hasMessageContaining("'shape'[0] must be a non-negative integer, got 1.0");
      assertRejected(file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4)).hasMessageContaining("must hold 2 integers");
      assertRejected(file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4)).hasMessageContaining("'data_offsets' must be an array of integers, got nothing");
      assertRejected(file("{\"__metadata__\":{\"k\":1}}", 0)).hasMessageContaining("__metadata__ entry 'k' must be a string");
      assertRejected(file("{\"__metadata__\":[]}", 0)).hasMessageContaining("__metadata__ must be an object");
    }

    @Test
    void anEmptyName() {
      assertRejected(file("{" + entry("", "F32", "[1]", 0, 4) + "}", 4)).hasMessageContaining("empty name");
    }
  }

  @Nested
  class RejectsTensors {
    @Test
    void anUnknownDtypeNamingTheTensor() {
      assertRejected(file("{" + entry("model.w", "F64", "[1]", 0, 8) + "}", 8))
          .hasMessageContaining("tensor 'model.w' has unsupported dtype 'F64'");
    }

    @Test
    void negativeOrHugeNumbers() {
      assertRejected(file("{" + entry("a", "F32", "[-1]", 0, 4) + "}", 4)).hasMessageContaining("got -1");
      assertRejected(file("{" + entry("a", "F32", "[1]", -4, 0) + "}", 4)).hasMessageContaining("'data_offsets'[0]");
      assertRejected(file("{" + entry("a", "F32", "[99999999999999999999]", 0, 4) + "}", 4)).hasMessageContaining("'shape'[0]");
    }

    @Test
    void offsetsPastTheDataSectionOrBackwards() {
      assertRejected(file("{" + entry("a", "F32", "[2]", 0, 8) + "}", 7)).hasMessageContaining("run past the data section (7 bytes");
      assertRejected(file("{" + entry("a", "F32", "[0]", 4, 0) + "}", 4)).hasMessageContaining("end before they begin");
    }

    @Test
    void aShapeThatDisagreesWithTheByteLength() {
      assertRejected(file("{" + entry("a", "BF16", "[3,2]", 0, 8) + "}", 8)).hasMessageContaining("shape (3, 2) of BF16 needs 12 bytes, but data_offsets span 8");
      assertRejected(file("{" + entry("a", "F32", "[4294967296,4294967296,4]", 0, 8) + "}", 8)).hasMessageContaining("more than 2^63");
    }

    @Test
    void overlappingTensorsNamingBoth() {
      assertRejected(file("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[1]", 4, 8) + "}", 8))
          .hasMessageContaining("tensors 'a' and 'b' overlap");
    }
  }

  @Nested
  class Lifecycle {
    @Test
    void buffersFailCleanlyAfterClose() {
      SafetensorsFile st = SafetensorsFile.open(file("{" + entry("a", "F32", "[1]", 0, 4) + "}", 4));
      ByteBuffer bytes = st.bytes("a");
      st.close();
      st.close();
      assertThatThrownBy(() -> bytes.get(0)).isInstanceOf(IllegalStateException.class);
      assertThatThrownBy(() -> st.bytes("a")).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
      assertThatThrownBy(() -> st.info("b")).isInstanceOf(CheckpointException.class).hasMessageContaining("no tensor 'b'");
    }
  }
}
