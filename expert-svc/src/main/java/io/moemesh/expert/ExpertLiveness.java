package io.moemesh.expert;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;

/**
 * Down once this service failed to load its experts (a process that cannot serve is not alive), so an orchestrator
 * restarts the process instead of leaving it unready forever. Loading is alive: the startup probe covers it.
 */
@Liveness
@ApplicationScoped
public class ExpertLiveness implements HealthCheck {
  @Inject ExpertHost host;

  @Override
  public HealthCheckResponse call() {
    var r = HealthCheckResponse.named("experts").status(host.failure() == null);
    if (host.failure() != null) r.withData("error", host.failure());
    return r.build();
  }
}
