package io.moemesh.kvstore;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;
import org.eclipse.microprofile.health.Readiness;

/** The store's two health concerns, one check each. */
public final class KvStoreHealthChecks {
  private KvStoreHealthChecks() {}

  /** Live while the lease reaper keeps running: a stalled reaper means expired objects pile up forever. */
  @Liveness
  @ApplicationScoped
  public static class ReaperRunning implements HealthCheck {
    @Inject LeaseReaper reaper;

    @Override
    public HealthCheckResponse call() {
      Duration since = reaper.sinceLastRun();
      Duration limit = reaper.interval().multipliedBy(5).plusSeconds(10);
      return HealthCheckResponse.named("kv-store lease reaper").status(since.compareTo(limit) < 0)
          .withData("since_last_run_ms", since.toMillis()).build();
    }
  }

  /** Ready once the store exists; reports its memory so an operator sees a full store at a glance. */
  @Readiness
  @ApplicationScoped
  public static class StoreMemory implements HealthCheck {
    @Inject KvObjectStore store;

    @Override
    public HealthCheckResponse call() {
      KvObjectStore.Stats s = store.stats();
      return HealthCheckResponse.named("kv-store memory").up()
          .withData("used_bytes", s.usedBytes()).withData("max_bytes", s.maxBytes())
          .withData("live_objects", s.liveObjects()).build();
    }
  }
}
