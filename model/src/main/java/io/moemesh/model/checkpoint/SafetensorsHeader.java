package io.moemesh.model.checkpoint;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The parsed and validated JSON header of one safetensors file. Every rule of the format is checked here, so
 * that reading a tensor afterwards can never go out of bounds: offsets lie inside the data section, no two
 * tensors overlap, and each byte range is exactly {@code product(shape) × dtype size}. Gaps between tensors are
 * allowed (the reference implementation insists on a dense layout; we only need safety).
 */
final class SafetensorsHeader {
  /** Largest header accepted, as in the reference implementation (100 MB there; 100 MiB here). */
  static final long MAX_HEADER_BYTES = 100L << 20;
  static final String METADATA_KEY = "__metadata__";

  /** A tensor and where its bytes start, relative to the data section. */
  record Entry(TensorInfo info, long begin) {}

  private final Map<String, String> metadata;
  private final Map<String, Entry> entries; // in storage order

  private SafetensorsHeader(Map<String, String> metadata, Map<String, Entry> entries) {
    this.metadata = metadata;
    this.entries = entries;
  }

  Map<String, String> metadata() { return metadata; }

  /** Tensors by name, iterating in storage order (by offset). */
  Map<String, Entry> entries() { return entries; }

  /** Parses {@code header}, the JSON of {@code file}, whose data section holds {@code dataSize} bytes. */
  static SafetensorsHeader parse(String file, byte[] header, long dataSize) {
    JsonNode root = Json.parseObject(header, file + ": header");
    Map<String, String> metadata = Map.of();
    List<Entry> list = new ArrayList<>();
    for (Map.Entry<String, JsonNode> field : root.properties()) {
      if (field.getKey().equals(METADATA_KEY)) metadata = metadata(file, field.getValue());
      else list.add(entry(file, field.getKey(), field.getValue(), dataSize));
    }
    list.sort(Comparator.comparingLong(Entry::begin).thenComparingLong(e -> e.info().byteLength()));
    checkNoOverlap(file, list);
    Map<String, Entry> entries = new LinkedHashMap<>();
    for (Entry e : list) entries.put(e.info().name(), e);
    return new SafetensorsHeader(metadata, Collections.unmodifiableMap(entries));
  }

  private static Map<String, String> metadata(String file, JsonNode node) {
    if (node.isNull()) return Map.of();
    if (!node.isObject())
      throw new CheckpointException(file + ": " + METADATA_KEY + " must be an object of strings, got " + Json.kind(node));
    Map<String, String> out = new LinkedHashMap<>();
    for (Map.Entry<String, JsonNode> f : node.properties()) {
      if (!f.getValue().isTextual())
        throw new CheckpointException(file + ": " + METADATA_KEY + " entry " + Json.quote(f.getKey())
            + " must be a string, got " + Json.kind(f.getValue()));
      out.put(f.getKey(), f.getValue().textValue());
    }
    return Collections.unmodifiableMap(out);
  }

  private static Entry entry(String file, String name, JsonNode node, long dataSize) {
    String where = file + ": tensor " + Json.quote(name);
    if (name.isEmpty()) throw new CheckpointException(file + ": a tensor has an empty name");
    if (!node.isObject())
      throw new CheckpointException(where + " must be an object {dtype, shape, data_offsets}, got " + Json.kind(node));
    JsonNode dt = node.get("dtype");
    if (dt == null || !dt.isTextual())
      throw new CheckpointException(where + ": 'dtype' must be a string, got " + Json.kind(dt));
    StDType dtype = StDType.parse(dt.textValue());
    if (dtype == null)
      throw new CheckpointException(where + " has unsupported dtype " + Json.quote(dt.textValue())
          + " (accepted: " + Arrays.toString(StDType.values()) + ")");
    long[] shape = naturals(where, node, "shape", -1);
    long[] offsets = naturals(where, node, "data_offsets", 2);
    long begin = offsets[0];
    long end = offsets[1];
    if (end < begin)
      throw new CheckpointException(where + ": data_offsets [" + begin + ", " + end + "] end before they begin");
    if (end > dataSize)
      throw new CheckpointException(where + ": data_offsets [" + begin + ", " + end + "] run past the data section ("
          + dataSize + " bytes; is the file truncated?)");
    TensorInfo info = new TensorInfo(name, dtype, shape, end - begin);
    long expected = byteLength(shape, dtype);
    if (expected != end - begin)
      throw new CheckpointException(where + ": shape " + info.shapeString() + " of " + dtype + " needs "
          + (expected < 0 ? "more than 2^63" : String.valueOf(expected)) + " bytes, but data_offsets span "
          + (end - begin));
    return new Entry(info, begin);
  }

  /** An array field of non-negative integers that fit a long; {@code length} -1 means any length. */
  private static long[] naturals(String where, JsonNode node, String field, int length) {
    JsonNode array = node.get(field);
    if (array == null || !array.isArray())
      throw new CheckpointException(where + ": '" + field + "' must be an array of integers, got " + Json.kind(array));
    if (length >= 0 && array.size() != length)
      throw new CheckpointException(where + ": '" + field + "' must hold " + length + " integers, got " + array.size());
    long[] out = new long[array.size()];
    for (int i = 0; i < out.length; i++) {
      JsonNode v = array.get(i);
      if (!v.isIntegralNumber() || !v.canConvertToLong() || v.longValue() < 0)
        throw new CheckpointException(where + ": '" + field + "'[" + i + "] must be a non-negative integer, got "
            + (v.isNumber() ? v.asText() : Json.kind(v)));
      out[i] = v.longValue();
    }
    return out;
  }

  /** {@code product(shape) × dtype size}, or -1 when that overflows a long. */
  static long byteLength(long[] shape, StDType dtype) {
    for (long d : shape) if (d == 0) return 0;
    try {
      long n = dtype.byteSize();
      for (long d : shape) n = Math.multiplyExact(n, d);
      return n;
    } catch (ArithmeticException overflow) {
      return -1;
    }
  }

  private static void checkNoOverlap(String file, List<Entry> sorted) {
    Entry previous = null;
    for (Entry e : sorted) {
      if (e.info().byteLength() == 0) continue;
      if (previous != null && e.begin() < previous.begin() + previous.info().byteLength())
        throw new CheckpointException(file + ": tensors " + Json.quote(previous.info().name()) + " and "
            + Json.quote(e.info().name()) + " overlap in the data section");
      previous = e;
    }
  }
}
