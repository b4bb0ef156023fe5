package io.moemesh.gateway;

import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * Admission by work: the prompt tokens admitted and not yet computed (a choice leaves the queue with its first token,
 * or when it fails or is cancelled), and the rate at which the mesh computes them, measured while any were queued
 * (tokens served over busy time, both decayed over the last {@link #MEMORY} of busy time). Their quotient is the wait a
 * new prompt would see; {@link #refusal} turns one beyond the bound into a fast 429 instead of a silent queue.
 */
final class PromptQueue {
  /** How long the rate remembers: long enough to span bursts, short enough to follow a scaled mesh. */
  static final Duration MEMORY = Duration.ofSeconds(30);
  /** Busy time needed before the rate is trusted; until then only the generation count limits admission. */
  static final Duration MIN_BUSY = Duration.ofSeconds(1);
  /**
   * Prompts (decayed) that must have been computed for the rate to be trusted: a mesh that stalls (nothing computed
   * for a while) has an unknown rate, not a rate of zero that would refuse everything.
   */
  static final double MIN_SERVED_PROMPTS = 4;

  private final LongSupplier nanoTime;
  private final Duration maxWait;
  private long queuedTokens;
  private double servedTokens, servedPrompts, busyNanos; // decayed
  private long lastNanos;

  PromptQueue(Duration maxWait, LongSupplier nanoTime) {
    if (maxWait.isNegative() || maxWait.isZero()) throw new IllegalArgumentException("the queue wait bound must be positive, got " + maxWait);
    this.maxWait = maxWait;
    this.nanoTime = nanoTime;
    this.lastNanos = nanoTime.getAsLong();
  }

  /** One choice's prompt, admitted: {@link #computed} or {@link #dropped} exactly once. */
  final class Entry {
    private final int tokens;
    private boolean left;

    private Entry(int tokens) {
      this.tokens = tokens;
    }

    /** Its first token arrived: the prompt was computed, at the mesh's rate. */
    void computed() {
      leave(true);
    }

    /** It failed or was cancelled before its first token. */
    void dropped() {
      leave(false);
    }

    private void leave(boolean served) {
      synchronized (PromptQueue.this) {
        if (left) return;
        left = true;
        advance();
        queuedTokens -= tokens;
        if (served) {
          servedTokens += tokens;
          servedPrompts++;
        }
      }
    }
  }

  /** Null if {@code tokens} more can queue within the bound (they are then queued, one entry per choice), else the 429. */
  synchronized Entry[] admit(int[] tokensPerChoice, Duration retryFloor) {
    long adding = 0;
    for (int t : tokensPerChoice) adding += t;
    Duration wait = predictedWait(queuedTokens + adding);
    if (wait != null && wait.compareTo(maxWait) > 0 && queuedTokens > 0) {
      Duration retry = wait.minus(maxWait);
      throw ApiError.saturated("The mesh is saturated: about " + Math.round(wait.toMillis() / 1000.0) + " s of prompts are queued ("
          + queuedTokens + " tokens, at " + Math.round(rate()) + " tokens/s); retry later",
          retry.compareTo(retryFloor) < 0 ? retryFloor : retry.compareTo(Duration.ofMinutes(1)) > 0 ? Duration.ofMinutes(1) : retry);
    }
    advance();
    Entry[] entries = new Entry[tokensPerChoice.length];
    for (int i = 0; i < entries.length; i++) {
      entries[i] = new Entry(tokensPerChoice[i]);
      queuedTokens += tokensPerChoice[i];
    }
    return entries;
  }

  synchronized long queuedTokens() {
    return queuedTokens;
  }

  /** Tokens computed per second while busy; NaN until {@link #MIN_BUSY} and {@link #MIN_SERVED_PROMPTS} were seen. */
  synchronized double rate() {
    advance();
    if (busyNanos < MIN_BUSY.toNanos() || servedPrompts < MIN_SERVED_PROMPTS) return Double.NaN;
    return servedTokens / (busyNanos / 1e9);
  }

  /** How long {@code tokens} take at the measured rate; null while the rate is unknown. */
  private Duration predictedWait(long tokens) {
    double rate = rate();
    if (Double.isNaN(rate)) return null;
    return Duration.ofNanos((long) Math.min(tokens / rate * 1e9, Duration.ofDays(1).toNanos()));
  }

  /**
   * Accounts for the time since the last change: if tokens were queued, it was busy time, and both counters decay
   * over it (so the rate follows the last {@link #MEMORY} of busy time; idle time neither counts nor decays).
   */
  private void advance() {
    long now = nanoTime.getAsLong();
    long dt = now - lastNanos;
    if (dt <= 0) return;
    lastNanos = now;
    if (queuedTokens == 0) return;
    double keep = Math.exp(-dt / (double) MEMORY.toNanos());
    servedTokens *= keep;
    servedPrompts *= keep;
    busyNanos = busyNanos * keep + MEMORY.toNanos() * (1 - keep); // + ∫ of the decay over the busy interval
  }
}
