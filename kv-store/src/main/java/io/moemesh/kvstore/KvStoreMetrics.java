package io.moemesh.kvstore;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import jakarta.inject.Singleton;
import java.time.Duration;
import java.util.function.ToDoubleFunction;

/**
 * The store's meters on {@code /q/metrics}: {@code moemesh_kvstore_bytes}, {@code moemesh_kvstore_objects{state}},
 * {@code moemesh_kvstore_evictions_total}, {@code moemesh_kvstore_put_bytes_total}, {@code moemesh_kvstore_get_bytes_total},
 * {@code moemesh_kvstore_put_seconds} (PutStart to commit), {@code moemesh_kvstore_get_seconds} (Get to last frame),
 * {@code moemesh_kvstore_puts_total{outcome}}, {@code moemesh_kvstore_expired_total}, {@code moemesh_kvstore_abandoned_puts_total}.
 */
@Singleton
public class KvStoreMetrics {
  /** How a put stream ended, as the {@code outcome} tag. */
  public enum PutOutcome { COMMITTED, REVOKED, FAILED }

  private final Counter putBytes;
  private final Counter getBytes;
  private final Timer putLatency;
  private final Timer getLatency;
  private final Counter[] putsByOutcome = new Counter[PutOutcome.values().length];

  KvStoreMetrics(MeterRegistry registry, KvObjectStore store) {
    gauge(registry, store, "moemesh.kvstore.bytes", "Off-heap bytes held by objects, puts in progress included", s -> s.stats().usedBytes());
    gauge(registry, store, "moemesh.kvstore.max.bytes", "Configured memory bound (max-bytes)", s -> s.stats().maxBytes());
    objects(registry, store, "writing", s -> s.stats().writingObjects());
    objects(registry, store, "live", s -> s.stats().liveObjects());
    objects(registry, store, "evictable", s -> s.stats().evictableObjects());
    objects(registry, store, "pinned", s -> s.stats().pinnedObjects());
    FunctionCounter.builder("moemesh.kvstore.evictions", store, s -> s.stats().evictionsTotal())
        .description("Released or expired objects evicted to make room for a put").register(registry);
    FunctionCounter.builder("moemesh.kvstore.expired", store, s -> s.stats().expiredTotal())
        .description("Objects freed by the reaper after their lease expired").register(registry);
    FunctionCounter.builder("moemesh.kvstore.abandoned.puts", store, s -> s.stats().abandonedPutsTotal())
        .description("Puts revoked by the reaper after put-idle-timeout without a frame").register(registry);
    putBytes = Counter.builder("moemesh.kvstore.put.bytes").description("Row bytes received by puts").register(registry);
    getBytes = Counter.builder("moemesh.kvstore.get.bytes").description("Row bytes sent by gets").register(registry);
    putLatency = Timer.builder("moemesh.kvstore.put").description("PutStart to committed object").register(registry);
    getLatency = Timer.builder("moemesh.kvstore.get").description("Get request to last frame sent").register(registry);
    for (PutOutcome o : PutOutcome.values()) {
      putsByOutcome[o.ordinal()] = Counter.builder("moemesh.kvstore.puts").description("Put streams by outcome")
          .tag("outcome", o.name().toLowerCase(java.util.Locale.ROOT)).register(registry);
    }
  }

  private static void gauge(MeterRegistry registry, KvObjectStore store, String name, String help, ToDoubleFunction<KvObjectStore> f) {
    Gauge.builder(name, store, f).description(help).register(registry);
  }

  private static void objects(MeterRegistry registry, KvObjectStore store, String state, ToDoubleFunction<KvObjectStore> f) {
    Gauge.builder("moemesh.kvstore.objects", store, f).description("Objects held, by state").tag("state", state).register(registry);
  }

  void putRows(long bytes) {
    putBytes.increment(bytes);
  }

  void getRows(long bytes) {
    getBytes.increment(bytes);
  }

  void putEnded(PutOutcome outcome, Duration sinceStart) {
    putsByOutcome[outcome.ordinal()].increment();
    if (outcome == PutOutcome.COMMITTED) putLatency.record(sinceStart);
  }

  void getCompleted(Duration sinceRequest) {
    getLatency.record(sinceRequest);
  }
}
