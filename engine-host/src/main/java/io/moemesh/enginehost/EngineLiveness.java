package io.moemesh.enginehost;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;

/**
 * Down once the engine failed to start (vLLM's {@code /health}: a dead engine is not alive), so an orchestrator
 * restarts the process instead of leaving it unready forever. Loading is alive: the startup probe covers it.
 */
@Liveness
@ApplicationScoped
public class EngineLiveness implements HealthCheck {
  @Inject EngineHost host;

  @Override
  public HealthCheckResponse call() {
    var r = HealthCheckResponse.named("engine").status(host.failure() == null);
    if (host.failure() != null) r.withData("error", host.failure());
    return r.build();
  }
}
