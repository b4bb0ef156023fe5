package io.moemesh.gateway;

import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * W3C trace context for the mesh (ARCHITECTURE.md, "Wire format"): every RPC of a request carries the same
 * {@code traceparent}, the client's if it sent a valid one, else a new sampled trace, so the prefill, kv-store and
 * decode spans of one request share one trace. (The gateway records no spans of its own yet.)
 */
final class TraceParent {
  static final String HEADER = "traceparent";
  private static final Pattern VALID = Pattern.compile("00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}");
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final HexFormat HEX = HexFormat.of();

  private TraceParent() {}

  static String of(String header) {
    if (header != null && VALID.matcher(header).matches()) return header;
    byte[] traceId = new byte[16];
    byte[] spanId = new byte[8];
    RANDOM.nextBytes(traceId);
    RANDOM.nextBytes(spanId);
    spanId[0] |= 1; // never all zeros
    traceId[0] |= 1;
    return "00-" + HEX.formatHex(traceId) + "-" + HEX.formatHex(spanId) + "-01";
  }
}
