package io.moemesh.prefill;

import io.moemesh.proto.kvstore.v1.StatsResponse;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.jboss.logging.Logger;

/**
 * Which kv-store a prompt's object goes to, when {@code moemesh.prefill.kv-store} lists several (one per store pod;
 * the ticket carries the chosen one's address, and decode pulls from it). Each pick takes the store with the most
 * free memory as its last {@link #refresh() Stats} said, minus what this replica has put there since — so a burst
 * of prompts between two polls spreads over the stores instead of piling onto one. A store that missed its last
 * {@value #MISSES_TO_SKIP} Stats in a row is skipped while another one answers; before any store has answered, the
 * stores take turns.
 */
final class KvStores {
  private static final Logger LOG = Logger.getLogger(KvStores.class);

  /**
   * Stats missed in a row before a store leaves the picks. One late answer is no outage: on a busy machine a Stats
   * past its deadline took a store out of the picks for a poll, and a burst of prompts all went to the other one.
   */
  static final int MISSES_TO_SKIP = 3;

  /** One store as this replica sees it. */
  static final class Store {
    final String address;
    private volatile long free = Long.MIN_VALUE; // max − used bytes at the last answered Stats; MIN_VALUE: none yet
    private volatile int misses; // Stats missed since the last answered one
    private final AtomicLong putSinceStats = new AtomicLong();

    Store(String address) {
      this.address = address;
    }

    private boolean answering() {
      return misses < MISSES_TO_SKIP;
    }

    private boolean known() {
      return answering() && free != Long.MIN_VALUE;
    }

    private long expectedFree() {
      return free - putSinceStats.get();
    }
  }

  private final List<Store> stores;
  private final Function<String, Optional<StatsResponse>> stats;
  private final AtomicInteger turn = new AtomicInteger();

  /**
   * @param addresses the stores' gRPC addresses ({@code host:port}), as decode replicas reach them
   * @param stats     a store's Stats, or empty when it does not answer
   */
  KvStores(List<String> addresses, Function<String, Optional<StatsResponse>> stats) {
    if (addresses.isEmpty()) throw new IllegalArgumentException("moemesh.prefill.kv-store: no kv-store address given");
    if (addresses.stream().distinct().count() != addresses.size())
      throw new IllegalArgumentException("moemesh.prefill.kv-store lists a store twice: " + addresses);
    this.stores = addresses.stream().map(Store::new).toList();
    this.stats = stats;
  }

  /** {@code host:port[,host:port…]} as configured. */
  static List<String> parse(String configured) {
    return Arrays.stream(configured.split(",")).map(String::trim).filter(a -> !a.isEmpty()).toList();
  }

  /**
   * The store for an object of {@code bytes}; counts them against that store until its next Stats. Synchronized:
   * prompts arrive in bursts on several threads, and picks that read the same figures would all take one store.
   */
  synchronized Store pick(long bytes) {
    Store best = null;
    for (Store s : stores) if (s.known() && (best == null || s.expectedFree() > best.expectedFree())) best = s;
    if (best == null) { // nobody has answered (yet): take turns among those not known to be down
      List<Store> candidates = stores.stream().filter(Store::answering).toList();
      List<Store> from = candidates.isEmpty() ? stores : candidates;
      best = from.get(Math.floorMod(turn.getAndIncrement(), from.size()));
    }
    best.putSinceStats.addAndGet(bytes);
    return best;
  }

  /** Asks every store for its figures (on the poller's thread, never a request's). */
  void refresh() {
    for (Store s : stores) {
      Optional<StatsResponse> answer = stats.apply(s.address);
      synchronized (this) { // a pick sees a store's figures before or after, never half updated
        if (answer.isEmpty()) {
          if (s.misses + 1 == MISSES_TO_SKIP)
            LOG.warnf("kv-store %s missed %d Stats in a row: no new objects go there while another store answers", s.address, MISSES_TO_SKIP);
          s.misses = Math.min(s.misses + 1, MISSES_TO_SKIP);
        } else {
          if (!s.answering()) LOG.infof("kv-store %s answers Stats again", s.address);
          s.misses = 0;
          s.putSinceStats.set(0);
          s.free = answer.get().getMaxBytes() - answer.get().getUsedBytes();
        }
      }
    }
  }

  int size() {
    return stores.size();
  }
}
