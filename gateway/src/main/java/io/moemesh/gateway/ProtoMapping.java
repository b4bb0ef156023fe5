package io.moemesh.gateway;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.moemesh.model.sampling.SamplingParams;
import java.time.Duration;

/** Conversions between the gateway's types and the wire: sampling parameters out, gRPC failures back as API errors. */
final class ProtoMapping {
  private ProtoMapping() {}

  /**
   * The choice's sampling parameters. With a seed and n > 1 each choice gets {@code seed + choice}: the same seed
   * for all would make the n choices identical, and this keeps the whole response reproducible.
   */
  static io.moemesh.proto.common.v1.SamplingParams sampling(SamplingParams s, int choice) {
    var b = io.moemesh.proto.common.v1.SamplingParams.newBuilder()
        .setTemperature(s.temperature()).setTopP(s.topP()).setTopK(s.topK()).setMinP(s.minP())
        .setPresencePenalty(s.presencePenalty()).setFrequencyPenalty(s.frequencyPenalty())
        .setRepetitionPenalty(s.repetitionPenalty()).addAllStopTokenIds(s.stopTokenIds())
        .setIgnoreEos(s.ignoreEos()).putAllLogitBias(s.logitBias());
    if (s.seed() != null) b.setSeed(s.seed() + choice);
    if (s.logprobs() != null) b.setLogprobs(s.logprobs());
    return b.build();
  }

  /**
   * How a failed call looks to the client: never a 500, which stays for the gateway's own bugs, and never an internal
   * address (gRPC's descriptions name the replica it dialed; the full failure stays in the gateway's log).
   */
  static ApiError toApiError(Throwable failure, Duration retryAfter) {
    if (failure instanceof ApiError e) return e;
    if (failure instanceof StatusRuntimeException e) return fromStatus(e.getStatus(), retryAfter);
    if (failure instanceof BackendException e) return ApiError.backend(502, withoutAddresses(e.getMessage()));
    return ApiError.backend(502, "The mesh failed: " + withoutAddresses(String.valueOf(failure)));
  }

  /** host:port, IPv4 and bracketed IPv6 addresses, and gRPC's bracketed stream details, taken out of a message. */
  private static final java.util.regex.Pattern ADDRESS = java.util.regex.Pattern.compile(
      "(?:[A-Za-z0-9.-]+/)?(?:\\d{1,3}(?:\\.\\d{1,3}){3}|\\[[0-9A-Fa-f:.]+\\]|[A-Za-z][A-Za-z0-9-]*(?:\\.[A-Za-z0-9-]+)*)(?::\\d{1,5})"
          + "|\\b\\d{1,3}(?:\\.\\d{1,3}){3}\\b");

  static String withoutAddresses(String message) {
    if (message == null) return null;
    int details = message.indexOf(" [closed=");
    String head = details >= 0 ? message.substring(0, details) : message; // gRPC: "... [closed=[], open=[[remote_addr=...]]]"
    return ADDRESS.matcher(head).replaceAll("<internal>");
  }

  private static ApiError fromStatus(Status status, Duration retryAfter) {
    String detail = withoutAddresses(status.getDescription() == null ? status.getCode().name() : status.getDescription());
    return switch (status.getCode()) {
      case UNAVAILABLE -> ApiError.unavailable("A backend replica is unavailable: " + detail, retryAfter);
      case RESOURCE_EXHAUSTED -> ApiError.saturated("The mesh is saturated: " + detail, retryAfter);
      case INVALID_ARGUMENT, OUT_OF_RANGE -> ApiError.invalid(detail, paramOf(detail));
      case DEADLINE_EXCEEDED -> ApiError.backend(504, "The mesh did not finish in time: " + detail);
      default -> ApiError.backend(502, "A backend replica failed: " + status.getCode() + ": " + detail);
    };
  }

  /** Engines word their errors like SamplingParams, wire name first ("top_p must be ..."). */
  private static String paramOf(String message) {
    int space = message.indexOf(' ');
    String first = space > 0 ? message.substring(0, space) : "";
    return first.matches("[a-z_]+") && message.startsWith(first + " must") ? first : null;
  }
}
