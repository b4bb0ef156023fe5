package io.moemesh.model.checkpoint;

import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.core.util.Separators;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@code model.safetensors.index.json}, the Hugging Face index of a sharded checkpoint:
 * {@code {"metadata": {"total_size": bytes}, "weight_map": {tensor name → shard file name}}}.
 *
 * @param weightMap tensor name → shard file name (relative to the checkpoint directory)
 * @param totalSize {@code metadata.total_size} (sum of tensor byte lengths), or -1 when absent
 */
public record ShardIndex(Map<String, String> weightMap, long totalSize) {
  public static final String FILE_NAME = "model.safetensors.index.json";

  public ShardIndex {
    weightMap = Collections.unmodifiableMap(new LinkedHashMap<>(weightMap));
  }

  /** Hugging Face's shard file name, 1-based: {@code shardFileName(0, 3)} is {@code model-00001-of-00003.safetensors}. */
  public static String shardFileName(int shard, int numShards) {
    if (shard < 0 || shard >= numShards) throw new IllegalArgumentException("shard " + shard + " of " + numShards);
    return String.format("model-%05d-of-%05d.safetensors", shard + 1, numShards);
  }

  /** Reads and validates an index file (every value of {@code weight_map} a non-empty file name). */
  public static ShardIndex read(Path file) {
    byte[] bytes;
    try {
      if (Files.size(file) > SafetensorsHeader.MAX_HEADER_BYTES)
        throw new CheckpointException(file + ": index larger than " + SafetensorsHeader.MAX_HEADER_BYTES + " bytes");
      bytes = Files.readAllBytes(file);
    } catch (IOException e) {
      throw new CheckpointException(file + ": cannot read: " + e, e);
    }
    JsonNode root = Json.parseObject(bytes, file.toString());
    JsonNode map = root.get("weight_map");
    if (map == null || !map.isObject())
      throw new CheckpointException(file + ": 'weight_map' must be an object of tensor name → shard file, got " + Json.kind(map));
    Map<String, String> weightMap = new LinkedHashMap<>();
    for (Map.Entry<String, JsonNode> e : map.properties()) {
      if (!e.getValue().isTextual() || e.getValue().textValue().isEmpty())
        throw new CheckpointException(file + ": weight_map entry " + Json.quote(e.getKey()) + " must name a shard file, got "
            + Json.kind(e.getValue()));
      weightMap.put(e.getKey(), e.getValue().textValue());
    }
    JsonNode total = root.path("metadata").path("total_size");
    long totalSize = total.isIntegralNumber() && total.canConvertToLong() ? total.longValue() : -1;
    return new ShardIndex(weightMap, totalSize);
  }

  /**
   * Writes {@link #FILE_NAME} into {@code dir}: keys sorted and indented by two spaces, as Hugging Face writes it,
   * so the same index always gives the same bytes.
   */
  public void write(Path dir) {
    ObjectNode root = Json.MAPPER.createObjectNode();
    ObjectNode metadata = root.putObject("metadata");
    if (totalSize >= 0) metadata.put("total_size", totalSize);
    ObjectNode map = root.putObject("weight_map");
    new TreeMap<>(weightMap).forEach(map::put);
    DefaultIndenter indent = new DefaultIndenter("  ", "\n");
    DefaultPrettyPrinter printer = new DefaultPrettyPrinter()
        .withSeparators(Separators.createDefaultInstance().withObjectFieldValueSpacing(Separators.Spacing.AFTER));
    printer.indentObjectsWith(indent);
    printer.indentArraysWith(indent);
    Path file = dir.resolve(FILE_NAME);
    try {
      Files.writeString(file, Json.MAPPER.writer(printer).writeValueAsString(root) + "\n");
    } catch (IOException e) {
      throw new CheckpointException(file + ": cannot write: " + e, e);
    }
  }
}
