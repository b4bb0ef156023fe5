package io.moemesh.gateway;

/** A backend ended a generation with an error of its own (FINISH_REASON_ERROR / ABORT, or a broken protocol). */
class BackendException extends RuntimeException {
  BackendException(String message) {
    super(message, null, false, false);
  }

  /** A decode stream closed without a finish reason (its replica went away between messages). */
  static final class Unfinished extends BackendException {
    Unfinished() {
      super("the backend stream ended without a finish reason");
    }
  }
}
