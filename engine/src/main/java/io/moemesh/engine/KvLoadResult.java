package io.moemesh.engine;

import java.util.Objects;

/**
 * How a {@link KvConnector#load} ended: every layer of the asked positions written, or why not. A failed prompt
 * load follows its {@link KvHandoff.OnLoadFailure} policy; a failed stored-prefix load is computed instead.
 */
public sealed interface KvLoadResult {
  /** Every layer's every asked position is in the request's pages. */
  Loaded LOADED = new Loaded();

  static Failed failed(Reason reason, String detail) {
    return new Failed(reason, detail);
  }

  record Loaded() implements KvLoadResult {}

  /** @param detail what went wrong, for people: it ends up in the request's error and in logs */
  record Failed(Reason reason, String detail) implements KvLoadResult {
    public Failed {
      Objects.requireNonNull(reason, "reason");
      Objects.requireNonNull(detail, "detail");
    }
  }

  /** Why a load failed, a bounded set (fit for a metric label). */
  enum Reason {
    /** nothing to load: no ticket or stored prefix was expected for the request, or the store no longer has the object */
    NOT_FOUND,
    /** the store could not be reached */
    STORE_UNAVAILABLE,
    /** the load ran past its deadline */
    TIMEOUT,
    /** the object's layout or rows do not fit the engine's cache, or it holds fewer positions than asked */
    INVALID_OBJECT,
    /** the store refused the read */
    REJECTED,
    /** the load was cancelled, normally because its request ended first */
    CANCELLED,
    /** the engine has no KV connector to load from */
    NO_CONNECTOR,
    /** anything else: a connector that threw, an unexpected store status */
    ERROR
  }
}
