package io.moemesh.planner.service;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;

/**
 * Live while rounds keep ending: a round that hangs (a stuck API call) makes the pod restart. A round may take one
 * scrape timeout per replica of either stage (scrapes are sequential) and a minute of API calls.
 */
@Liveness
@ApplicationScoped
public class PlannerHealthCheck implements HealthCheck {
  @Inject PlannerService service;
  @Inject PlannerConfig config;
  private final Instant startedAt = Instant.now();

  @Override
  public HealthCheckResponse call() {
    Instant last = service.lastRoundAt();
    Instant since = last == null ? startedAt : last;
    int replicas = config.prefill().maxReplicas() + config.decode().maxReplicas();
    Duration allowed = config.interval().multipliedBy(3).plus(config.scrapeTimeout().multipliedBy(replicas)).plusMinutes(1);
    boolean live = Duration.between(since, Instant.now()).compareTo(allowed) <= 0;
    return HealthCheckResponse.named("planner-rounds").status(live).withData("lastRoundAt", String.valueOf(last)).build();
  }
}
