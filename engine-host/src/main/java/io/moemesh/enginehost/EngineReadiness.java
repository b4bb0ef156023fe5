package io.moemesh.enginehost;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/** Ready once the model is loaded and the engine runs. */
@Readiness
@ApplicationScoped
public class EngineReadiness implements HealthCheck {
  @Inject EngineHost host;

  @Override
  public HealthCheckResponse call() {
    var r = HealthCheckResponse.named("engine").status(host.isReady());
    if (host.failure() != null) r.withData("error", host.failure());
    return r.build();
  }
}
