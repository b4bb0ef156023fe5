package io.moemesh.gateway;

import io.moemesh.gateway.GenerationRequest.Endpoint;
import java.util.UUID;
import java.util.regex.Pattern;

/** Request ids: the client's {@code X-Request-Id} when it is safe to pass on as gRPC metadata, else a new one. */
final class RequestIds {
  static final String HEADER = "X-Request-Id";
  private static final Pattern SAFE = Pattern.compile("[A-Za-z0-9._:-]{1,128}");

  private RequestIds() {}

  static String of(String header, Endpoint endpoint) {
    if (header != null && SAFE.matcher(header).matches()) return header;
    return endpoint.idPrefix + UUID.randomUUID().toString().replace("-", "");
  }
}
