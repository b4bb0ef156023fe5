package io.moemesh.kvstore;

/**
 * A typed store error: the {@link Reason} maps one-to-one onto a gRPC status code, the message says exactly
 * what was wrong (key, field, expected and actual values).
 */
public final class KvStoreException extends RuntimeException {

  /** Why a call failed; the gRPC adapter maps each to the status of the same name. */
  public enum Reason { INVALID_ARGUMENT, ALREADY_EXISTS, RESOURCE_EXHAUSTED, NOT_FOUND, FAILED_PRECONDITION }

  private final Reason reason;

  public KvStoreException(Reason reason, String message) {
    super(message, null, false, false); // expected outcomes: no stack trace to fill
    this.reason = reason;
  }

  public Reason reason() {
    return reason;
  }

  static KvStoreException invalid(String format, Object... args) {
    return new KvStoreException(Reason.INVALID_ARGUMENT, format.formatted(args));
  }

  static KvStoreException notFound(String format, Object... args) {
    return new KvStoreException(Reason.NOT_FOUND, format.formatted(args));
  }

  static KvStoreException precondition(String format, Object... args) {
    return new KvStoreException(Reason.FAILED_PRECONDITION, format.formatted(args));
  }

  static KvStoreException exists(String format, Object... args) {
    return new KvStoreException(Reason.ALREADY_EXISTS, format.formatted(args));
  }

  static KvStoreException exhausted(String format, Object... args) {
    return new KvStoreException(Reason.RESOURCE_EXHAUSTED, format.formatted(args));
  }
}
