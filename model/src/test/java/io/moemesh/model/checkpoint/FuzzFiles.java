package io.moemesh.model.checkpoint;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/** Seeded generator of valid safetensors files and of their mutations, for {@link SafetensorsFuzzTest}. */
final class FuzzFiles {
  enum Mutation {
    NONE, TRUNCATE, FLIP_HEADER_BYTES, FLIP_BITS, HEADER_LENGTH, WRONG_TYPE, OVERLAP, PAST_EOF, SHAPE_MISMATCH,
    UNKNOWN_DTYPE, DUPLICATE_KEY, NON_UTF8, HUGE_SHAPE, SPLICE_JSON, EXTEND_DATA
  }

  record Case(Mutation mutation, byte[] bytes) {}

  /** One header entry, kept as JSON fragments so that mutations can put anything in any field. */
  static final class Entry {
    String name;
    StDType dtype;
    long begin;
    long end;
    String dtypeJson;
    String shapeJson;
    String offsetsJson;
    String extra = "";
    String rawValue; // replaces the whole {...} when set

    Entry(String name, StDType dtype, long[] shape, long begin) {
      this.name = name;
      this.dtype = dtype;
      this.begin = begin;
      this.end = begin + SafetensorsHeader.byteLength(shape, dtype);
      dtypeJson = jsonString(dtype.name());
      shapeJson = Arrays.toString(shape);
      offsets(begin, end);
    }

    void offsets(long b, long e) {
      offsetsJson = "[" + b + "," + e + "]";
    }

    String render() {
      String value = rawValue != null ? rawValue
          : "{\"dtype\":" + dtypeJson + ",\"shape\":" + shapeJson + ",\"data_offsets\":" + offsetsJson + extra + "}";
      return jsonString(name) + ":" + value;
    }
  }

  private static final String[] JUNK = {"\"x\"", "1", "-1", "1.5", "1e400", "99999999999999999999999", "null", "true", "[]",
      "{}", "[\"1\"]", "[[1]]", "[1,2,3]", "{\"a\":1}", "\"\\ud800\"", "[" .repeat(3000) + "]".repeat(3000), "-0", "0.0"};
  private static final String[] UNKNOWN_DTYPES = {"F64", "F8_E5M2", "I16", "U16", "U32", "U64", "F4", "bf16", "f32", "",
      "BF16 ", "\uFF26\uFF13\uFF12"};
  private static final int[][] INVALID_UTF8 = {{0xFF}, {0xC0, 0x80}, {0x80}, {0xED, 0xA0, 0x80}, {0xF4, 0x90, 0x80, 0x80}, {0xE2, 0x82}};
  private static final String[] TOKENS = {"{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "0", "-", "1e9", "NaN", "/*", "\u0000",
      "\uD83D", "\"__metadata__\"", "\"dtype\"", "\"shape\"", "\"data_offsets\"", " ", "\n", "true"};

  private final Random r;
  final List<Entry> entries = new ArrayList<>();
  String metadataJson;
  long dataSize;

  private FuzzFiles(long seed) {
    r = new Random(seed);
    int n = 1 + r.nextInt(6);
    long offset = 0;
    for (int i = 0; i < n; i++) {
      StDType dtype = StDType.values()[r.nextInt(StDType.values().length)];
      long[] shape = new long[r.nextInt(4)];
      for (int d = 0; d < shape.length; d++) shape[d] = (i == 0 || r.nextInt(10) > 0) ? 1 + r.nextInt(5) : 0;
      if (r.nextInt(4) == 0) offset += r.nextInt(4); // a gap
      String name = switch (r.nextInt(3)) {
        case 0 -> "model.layers." + i + ".mlp.experts." + r.nextInt(256) + ".w" + (1 + r.nextInt(3)) + ".weight";
        case 1 -> "张量." + i;
        default -> "\uD83D\uDE00\"q\\" + i; // emoji, and characters that JSON must escape
      };
      Entry e = new Entry(name, dtype, shape, offset);
      entries.add(e);
      offset = e.end;
    }
    dataSize = offset + (r.nextInt(4) == 0 ? r.nextInt(8) : 0);
    metadataJson = switch (r.nextInt(3)) {
      case 0 -> null;
      case 1 -> "{\"format\":\"pt\"}";
      default -> "{}";
    };
    Collections.shuffle(entries, r);
  }

  static Case valid(long seed) {
    FuzzFiles f = new FuzzFiles(seed);
    return new Case(Mutation.NONE, f.file(f.header()));
  }

  static Case generate(long seed) {
    FuzzFiles f = new FuzzFiles(seed);
    Mutation m = Mutation.values()[f.r.nextInt(Mutation.values().length)];
    return new Case(m, f.mutate(m));
  }

  private byte[] mutate(Mutation m) {
    Entry e = entries.get(r.nextInt(entries.size()));
    Entry nonEmpty = entries.stream().filter(x -> x.end > x.begin).findFirst().orElseThrow();
    switch (m) {
      case WRONG_TYPE -> wrongType(e);
      case OVERLAP -> {
        long k = r.nextLong(nonEmpty.end - nonEmpty.begin);
        long length = 1 + r.nextLong(nonEmpty.end - nonEmpty.begin - k);
        Entry overlap = new Entry("overlap", StDType.U8, new long[] {length}, nonEmpty.begin + k);
        entries.add(r.nextInt(entries.size() + 1), overlap);
      }
      case PAST_EOF -> {
        long shift = dataSize - e.begin + 1 + r.nextInt(100);
        e.offsets(e.begin + shift, e.end + shift);
      }
      case SHAPE_MISMATCH -> {
        if (r.nextBoolean()) nonEmpty.offsets(nonEmpty.begin, nonEmpty.end - 1);
        else nonEmpty.shapeJson = nonEmpty.shapeJson.equals("[]") ? "[2]" : nonEmpty.shapeJson.replaceFirst("\\]$", ",2]");
      }
      case UNKNOWN_DTYPE -> e.dtypeJson = jsonString(UNKNOWN_DTYPES[r.nextInt(UNKNOWN_DTYPES.length)]);
      case DUPLICATE_KEY -> duplicate(e);
      case HUGE_SHAPE -> {
        String[] shapes = {"[0,1099511627776]", "[2147483648,0]", "[0," + Long.MAX_VALUE + "]", "[4611686018427387904,4611686018427387904]",
            "[2147483647,0,2147483647]"};
        e.shapeJson = shapes[r.nextInt(shapes.length)];
        e.offsets(e.begin, e.begin);
      }
      default -> {}
    }
    byte[] header = header();
    return switch (m) {
      case NON_UTF8 -> file(invalidUtf8(header));
      case SPLICE_JSON -> {
        byte[] spliced = splice(header, r, 1 + r.nextInt(3));
        yield r.nextInt(4) == 0 ? withLength(file(spliced), header.length) : file(spliced);
      }
      default -> bytes(m, file(header), header.length);
    };
  }

  private byte[] bytes(Mutation m, byte[] file, int headerLength) {
    switch (m) {
      case TRUNCATE -> { return Arrays.copyOf(file, r.nextInt(file.length)); }
      case FLIP_HEADER_BYTES -> {
        for (int k = 1 + r.nextInt(4); k > 0; k--) file[r.nextInt(8 + headerLength)] = (byte) r.nextInt(256);
      }
      case FLIP_BITS -> file[r.nextInt(file.length)] ^= (byte) (1 << r.nextInt(8));
      case HEADER_LENGTH -> {
        long[] lengths = {-1, Long.MIN_VALUE, Long.MAX_VALUE, 0, 1, headerLength - 1, headerLength + 1, headerLength + 1 + r.nextInt(64),
            file.length - 8, file.length - 7, (100L << 20) + 1, (1L << 32) | headerLength, r.nextLong()};
        return withLength(file, lengths[r.nextInt(lengths.length)]);
      }
      case EXTEND_DATA -> {
        return Arrays.copyOf(file, file.length + 1 + r.nextInt(16));
      }
      default -> {}
    }
    return file;
  }

  private void wrongType(Entry e) {
    String junk = JUNK[r.nextInt(JUNK.length)];
    switch (r.nextInt(7)) {
      case 0 -> e.dtypeJson = junk;
      case 1 -> e.shapeJson = junk;
      case 2 -> e.shapeJson = "[" + junk + "]";
      case 3 -> e.offsetsJson = junk;
      case 4 -> e.offsetsJson = "[" + junk + "," + e.end + "]";
      case 5 -> e.rawValue = junk;
      default -> metadataJson = r.nextBoolean() ? junk : "{\"k\":" + junk + "}";
    }
  }

  private void duplicate(Entry e) {
    switch (r.nextInt(3)) {
      case 0 -> entries.add(r.nextInt(entries.size() + 1), e);
      case 1 -> e.extra = ",\"" + (r.nextBoolean() ? "dtype\":" + e.dtypeJson : "shape\":" + e.shapeJson);
      default -> metadataJson = "{\"a\":\"1\",\"a\":\"2\"}";
    }
  }

  private byte[] invalidUtf8(byte[] header) {
    int at = 1 + new String(header, StandardCharsets.UTF_8).indexOf('"') + 1; // inside the first key (header is ASCII up to it)
    int[] seq = INVALID_UTF8[r.nextInt(INVALID_UTF8.length)];
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(header, 0, at);
    for (int b : seq) out.write(b);
    out.write(header, at, header.length - at);
    return out.toByteArray();
  }

  /** {@code times} random edits of JSON text: delete a short range or insert a token. */
  static byte[] splice(byte[] json, Random r, int times) {
    byte[] out = json;
    for (int t = 0; t < times; t++) {
      int at = r.nextInt(out.length + 1);
      ByteArrayOutputStream b = new ByteArrayOutputStream();
      b.write(out, 0, at);
      int skip = 0;
      if (r.nextBoolean()) skip = Math.min(out.length - at, 1 + r.nextInt(6));
      else b.writeBytes(TOKENS[r.nextInt(TOKENS.length)].getBytes(StandardCharsets.UTF_8));
      b.write(out, at + skip, out.length - at - skip);
      out = b.toByteArray();
    }
    return out;
  }

  private byte[] header() {
    StringBuilder json = new StringBuilder("{");
    if (metadataJson != null) json.append("\"__metadata__\":").append(metadataJson);
    for (Entry e : entries) json.append(json.length() > 1 ? "," : "").append(e.render());
    json.append("}");
    if (r.nextBoolean()) json.append(" ".repeat((8 - json.length() % 8) % 8));
    return json.toString().getBytes(StandardCharsets.UTF_8);
  }

  private byte[] file(byte[] header) {
    byte[] data = new byte[(int) dataSize];
    r.nextBytes(data);
    return StFiles.bytes(header, data);
  }

  private static byte[] withLength(byte[] file, long length) {
    if (file.length >= 8) ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN).putLong(0, length);
    return file;
  }

  static String jsonString(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }
}
