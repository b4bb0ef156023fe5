package io.moemesh.model.checkpoint;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/** Strict JSON for checkpoint files: UTF-8 only, no duplicate keys, nothing after the value but whitespace. */
final class Json {
  static final ObjectMapper MAPPER = JsonMapper.builder()
      .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .build();

  private Json() {}

  /** Parses {@code utf8} as one JSON object; {@code where} names the file and part for error messages. */
  static JsonNode parseObject(byte[] utf8, String where) {
    String text;
    try {
      text = StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(utf8))
          .toString();
    } catch (CharacterCodingException e) {
      throw new CheckpointException(where + " is not valid UTF-8", e);
    }
    JsonNode root;
    try {
      root = MAPPER.readTree(text);
    } catch (JsonProcessingException e) {
      String at = e.getLocation() == null ? "" : " (at character " + e.getLocation().getCharOffset() + ")";
      throw new CheckpointException(where + " is not valid JSON" + at + ": " + e.getOriginalMessage(), e);
    }
    if (root == null || !root.isObject())
      throw new CheckpointException(where + " must be a JSON object, got " + kind(root));
    return root;
  }

  /** A short description of a node's JSON type, for error messages. */
  static String kind(JsonNode node) {
    if (node == null || node.isMissingNode()) return "nothing";
    return node.getNodeType().name().toLowerCase(java.util.Locale.ROOT);
  }

  /** {@code s} quoted, and cut short if it is long (a fuzzed name may be megabytes). */
  static String quote(String s) {
    return "'" + (s.length() <= 120 ? s : s.substring(0, 120) + "…") + "'";
  }
}
