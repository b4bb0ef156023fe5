package io.moemesh.planner.decide;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What one replica of each stage sustains, measured beforehand on the hardware it runs on (docs/planner.md, "Profile").
 * Stored as a small JSON file:
 *
 * <pre>{@code
 * {"prefill": {"tokensPerSecondPerReplica": 2400, "ttftTargetMs": 500},
 *  "decode":  {"concurrencyPerReplica": 16, "itlTargetMs": 60},
 *  "measuredOn": "2026-12-07, AMD Zen 3 (AVX2+FMA), 2 cores, models/demo"}
 * }</pre>
 *
 * @param prefillTokensPerSecond prompt tokens per second one prefill replica computes while its TTFT stays at the target
 * @param profiledTtftTargetMs   the TTFT target that figure was measured at
 * @param decodeConcurrency      requests one decode replica runs at once while its ITL stays at the target
 * @param profiledItlTargetMs    the ITL target that figure was measured at
 * @param measuredOn             date, machine and model of the measurement, for the log
 */
public record Profile(double prefillTokensPerSecond, double profiledTtftTargetMs, double decodeConcurrency,
    double profiledItlTargetMs, String measuredOn) {

  public Profile {
    requirePositive("prefill.tokensPerSecondPerReplica", prefillTokensPerSecond);
    requirePositive("prefill.ttftTargetMs", profiledTtftTargetMs);
    requirePositive("decode.concurrencyPerReplica", decodeConcurrency);
    requirePositive("decode.itlTargetMs", profiledItlTargetMs);
  }

  public static Profile read(Path file) throws IOException {
    try {
      return parse(Files.readString(file));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(file + ": " + e.getMessage(), e);
    }
  }

  public static Profile parse(String json) {
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("profile is not JSON: " + e.getOriginalMessage(), e);
    }
    if (root == null || !root.isObject()) throw new IllegalArgumentException("profile is not a JSON object");
    return new Profile(number(root, "prefill", "tokensPerSecondPerReplica"), number(root, "prefill", "ttftTargetMs"),
        number(root, "decode", "concurrencyPerReplica"), number(root, "decode", "itlTargetMs"),
        root.path("measuredOn").asText(""));
  }

  public String toJson() {
    var mapper = new ObjectMapper();
    var root = mapper.createObjectNode();
    root.putObject("prefill").put("tokensPerSecondPerReplica", prefillTokensPerSecond).put("ttftTargetMs", profiledTtftTargetMs);
    root.putObject("decode").put("concurrencyPerReplica", decodeConcurrency).put("itlTargetMs", profiledItlTargetMs);
    root.put("measuredOn", measuredOn);
    return root.toPrettyString();
  }

  private static double number(JsonNode root, String section, String field) {
    JsonNode node = root.path(section).path(field);
    if (!node.isNumber()) throw new IllegalArgumentException("profile needs a number at " + section + "." + field);
    return node.asDouble();
  }

  private static void requirePositive(String field, double value) {
    if (!(value > 0) || !Double.isFinite(value)) throw new IllegalArgumentException("profile " + field + " must be > 0, not " + value);
  }
}
