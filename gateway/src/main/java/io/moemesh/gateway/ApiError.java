package io.moemesh.gateway;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;

/**
 * An error answered in OpenAI's shape {@code {"error": {"message", "type", "param", "code"}}} with its HTTP status;
 * {@code retryAfter} (429, 503) becomes a {@code Retry-After} header.
 */
final class ApiError extends RuntimeException {
  private final int status;
  private final String type;
  private final String param;
  private final String code;
  private final Duration retryAfter;

  ApiError(int status, String type, String message, String param, String code, Duration retryAfter) {
    super(message, null, false, false);
    this.status = status;
    this.type = type;
    this.param = param;
    this.code = code;
    this.retryAfter = retryAfter;
  }

  /** 400: the client's request is wrong; {@code param} names the field (null if none). */
  static ApiError invalid(String message, String param) {
    return new ApiError(400, "invalid_request_error", message, param, null, null);
  }

  static ApiError invalid(String message, String param, String code) {
    return new ApiError(400, "invalid_request_error", message, param, code, null);
  }

  static ApiError unauthorized(String message) {
    return new ApiError(401, "invalid_request_error", message, null, "invalid_api_key", null);
  }

  static ApiError modelNotFound(String model) {
    return new ApiError(404, "invalid_request_error",
        "The model `" + model + "` does not exist or you do not have access to it.", "model", "model_not_found", null);
  }

  static ApiError notFound(String message) {
    return new ApiError(404, "invalid_request_error", message, null, "not_found", null);
  }

  static ApiError saturated(String message, Duration retryAfter) {
    return new ApiError(429, "rate_limit_error", message, null, "rate_limit_exceeded", retryAfter);
  }

  static ApiError unavailable(String message, Duration retryAfter) {
    return new ApiError(503, "server_error", message, null, "service_unavailable", retryAfter);
  }

  /** A backend failed for a reason that is not the client's; 502/504 keep 500 for the gateway's own bugs. */
  static ApiError backend(int status, String message) {
    return new ApiError(status, "server_error", message, null, null, null);
  }

  int status() {
    return status;
  }

  Duration retryAfter() {
    return retryAfter;
  }

  /** {@code {"error": {...}}}. */
  ObjectNode toJson() {
    ObjectNode root = JsonNodeFactory.instance.objectNode();
    ObjectNode error = root.putObject("error");
    error.put("message", getMessage()).put("type", type).put("param", param).put("code", code);
    return root;
  }
}
