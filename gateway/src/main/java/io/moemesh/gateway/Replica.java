package io.moemesh.gateway;

import io.grpc.ManagedChannel;
import io.moemesh.proto.common.v1.LoadReport;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One prefill or decode replica: its channel, its last load report, and what this gateway has sent it since
 * (the report lags by up to a poll interval, so the local counts keep a burst from piling onto one replica).
 */
final class Replica {
  enum Role { PREFILL, DECODE }

  private final Role role;
  private final String address;
  private final ManagedChannel channel;
  private final AtomicLong localPromptTokens = new AtomicLong();
  private final AtomicInteger localRequests = new AtomicInteger();
  private final AtomicBoolean polling = new AtomicBoolean();
  private volatile int othersRunning; // what the last report counted beyond this gateway's own streams
  private boolean answeredBefore; // guarded by polling
  private int missedPolls; // consecutive Load calls that timed out or failed short of UNAVAILABLE; guarded by polling
  private volatile LoadReport load = LoadReport.getDefaultInstance();
  private volatile boolean reachable; // false until the first Load answers
  private volatile boolean slow; // out of routing for missed polls only: busy, not known dead

  Replica(Role role, String address, ManagedChannel channel) {
    this.role = role;
    this.address = address;
    this.channel = channel;
  }

  Role role() {
    return role;
  }

  String address() {
    return address;
  }

  ManagedChannel channel() {
    return channel;
  }

  /**
   * Out of routing because its Load calls were slower than their deadline, not because it is gone: a last resort
   * when no replica of its role is reachable (a 503 helps no one while a busy replica could still serve).
   */
  boolean slow() {
    return !reachable && slow;
  }

  boolean reachable() {
    return reachable;
  }

  LoadReport load() {
    return load;
  }

  /** Prefill routing key: queued prompt tokens reported plus those sent since. */
  long queuedPromptTokens() {
    return load.getQueuedPromptTokens() + localPromptTokens.get();
  }

  /**
   * Decode routing key: this gateway's streams there, exact at every dispatch, plus the ones the last report counted
   * beyond them (other gateways', direct clients').
   */
  int decodeStreams() {
    return localRequests.get() + othersRunning;
  }

  void started(int promptTokens) {
    localRequests.incrementAndGet();
    localPromptTokens.addAndGet(promptTokens);
  }

  void ended(int promptTokens) {
    localRequests.decrementAndGet();
    localPromptTokens.addAndGet(-promptTokens);
  }

  /** Claims the right to poll; false while the previous Load call is still out. */
  boolean startPoll() {
    return polling.compareAndSet(false, true);
  }

  void polled(LoadReport report) {
    if (!reachable && answeredBefore) LOG.infof("%s answers Load again", this);
    answeredBefore = true;
    missedPolls = 0;
    load = report;
    othersRunning = Math.max(0, report.getNumRunning() + report.getNumWaiting() - localRequests.get());
    reachable = true;
    slow = false;
    polling.set(false);
  }

  /**
   * A Load call failed. UNAVAILABLE (nothing listens, the connection broke) takes the replica out of routing at once;
   * anything else (a Load slower than its deadline: a replica busy with a burst) only after {@link #MAX_MISSED_POLLS}
   * in a row, so a loaded replica is not mistaken for a dead one.
   */
  void pollFailed(io.grpc.Status.Code code) {
    boolean gone = code == io.grpc.Status.Code.UNAVAILABLE;
    if (gone || ++missedPolls >= MAX_MISSED_POLLS) {
      leave("Load answered " + code);
      slow = !gone && answeredBefore;
    }
    polling.set(false);
  }

  static final int MAX_MISSED_POLLS = 3;

  /** A call found the replica unreachable: skip it until its next Load answers. */
  void markUnreachable() {
    leave("a call answered UNAVAILABLE");
    slow = false;
  }

  private void leave(String why) {
    if (reachable) LOG.warnf("%s leaves routing until its Load answers again: %s", this, why);
    reachable = false;
  }

  private static final org.jboss.logging.Logger LOG = org.jboss.logging.Logger.getLogger(Replica.class);

  @Override
  public String toString() {
    return role.name().toLowerCase(java.util.Locale.ROOT) + "@" + address;
  }
}
