package io.moemesh.gateway;

/** A backend ended a generation with an error of its own (FINISH_REASON_ERROR / ABORT, or a broken protocol). */
final class BackendException extends RuntimeException {
  BackendException(String message) {
    super(message, null, false, false);
  }
}
