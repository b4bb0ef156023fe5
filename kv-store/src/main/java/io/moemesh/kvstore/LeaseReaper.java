package io.moemesh.kvstore;

import io.quarkus.runtime.Startup;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jboss.logging.Logger;

/** Frees expired, unpinned objects and idle puts every {@code reaper-interval}, on its own thread (frees are handshakes). */
@Startup
@Singleton
public class LeaseReaper {
  private static final Logger LOG = Logger.getLogger(LeaseReaper.class);

  private final KvObjectStore store;
  private final Duration interval;
  private final ScheduledExecutorService timer;
  private volatile long lastRunNanos = System.nanoTime();

  LeaseReaper(KvObjectStore store, KvStoreConfig config) {
    this.store = store;
    this.interval = config.reaperInterval();
    this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "kv-store-reaper");
      t.setDaemon(true);
      return t;
    });
    long millis = Math.max(1, interval.toMillis());
    timer.scheduleWithFixedDelay(this::reap, millis, millis, TimeUnit.MILLISECONDS);
  }

  private void reap() {
    try {
      int freed = store.reap();
      if (freed > 0) LOG.debugf("freed %d expired objects or idle puts", freed);
    } catch (RuntimeException e) {
      LOG.error("reaper run failed", e); // keep the schedule alive; liveness reports a stalled reaper
    }
    lastRunNanos = System.nanoTime();
  }

  /** Time since the last completed run: the liveness check compares it with the interval. */
  Duration sinceLastRun() {
    return Duration.ofNanos(System.nanoTime() - lastRunNanos);
  }

  Duration interval() {
    return interval;
  }

  @PreDestroy
  void stop() {
    timer.shutdownNow();
  }
}
