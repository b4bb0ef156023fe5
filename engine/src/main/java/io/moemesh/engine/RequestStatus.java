package io.moemesh.engine;

/**
 * A request's life in one engine, the single source of truth for its state:
 * <pre>
 *   WAITING ──────────────────────────▶ RUNNING ──▶ FINISHED_STOPPED   (EOS or a stop token id)
 *     ▲   └─▶ WAITING_FOR_REMOTE_KV ──▶    │   ──▶ FINISHED_LENGTH    (max_tokens or the context length)
 *     │        (decode role: pages held,    │   ──▶ FINISHED_ABORTED   (abort(id), in any state)
 *     │         KV arriving from a store)   │   ──▶ FINISHED_ERROR     (this request failed; others go on)
 *     └──────────── PREEMPTED ◀─────────────┘  (out of KV pages: pages freed, recomputed when re-admitted)
 * </pre>
 * Progress is one counter for every phase: {@code numComputedTokens} against {@code numTokens} (prompt +
 * output). A prompt chunk, a prefix-cache hit, KV loaded from a store and a decode step all just advance it;
 * a step that brings it level with {@code numTokens} samples the next token.
 */
public enum RequestStatus {
  WAITING,
  WAITING_FOR_REMOTE_KV,
  RUNNING,
  PREEMPTED,
  FINISHED_STOPPED,
  FINISHED_LENGTH,
  FINISHED_ABORTED,
  FINISHED_ERROR;

  public boolean isFinished() {
    return switch (this) {
      case FINISHED_STOPPED, FINISHED_LENGTH, FINISHED_ABORTED, FINISHED_ERROR -> true;
      case WAITING, WAITING_FOR_REMOTE_KV, RUNNING, PREEMPTED -> false;
    };
  }

  /** OpenAI's {@code finish_reason}, or null while the request is unfinished. */
  public String finishReason() {
    return switch (this) {
      case FINISHED_STOPPED -> "stop";
      case FINISHED_LENGTH -> "length";
      case FINISHED_ABORTED -> "abort";
      case FINISHED_ERROR -> "error";
      case WAITING, WAITING_FOR_REMOTE_KV, RUNNING, PREEMPTED -> null;
    };
  }
}
