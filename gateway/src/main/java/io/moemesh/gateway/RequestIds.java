package io.moemesh.gateway;

import io.moemesh.gateway.GenerationRequest.Endpoint;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * Request ids. Every request gets a new mesh id ({@code chatcmpl-…} / {@code cmpl-…}: the response's {@code id}, the
 * RPCs' {@code request_id}, the KV object's key), so no client can choose, collide with or guess another request's
 * keys. A client's {@code X-Request-Id} is only a correlation id: echoed in the response and carried as
 * {@code x-request-id} metadata for the services' logs and spans, when it is safe to pass on.
 */
final class RequestIds {
  static final String HEADER = "X-Request-Id";
  private static final Pattern SAFE = Pattern.compile("[A-Za-z0-9._:-]{1,128}");

  /** @param meshId the request's own id; @param correlationId the client's id if it gave a safe one, else the mesh id */
  record Ids(String meshId, String correlationId) {}

  private RequestIds() {}

  static Ids of(String header, Endpoint endpoint) {
    String meshId = endpoint.idPrefix + UUID.randomUUID().toString().replace("-", "");
    return new Ids(meshId, header != null && SAFE.matcher(header).matches() ? header : meshId);
  }
}
