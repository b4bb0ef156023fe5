package io.moemesh.enginehost;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/** Ready once the model is loaded and the engine runs, until the replica drains ({@link Drain}). */
@Readiness
@ApplicationScoped
public class EngineReadiness implements HealthCheck {
  @Inject EngineHost host;
  @Inject Drain drain;

  @Override
  public HealthCheckResponse call() {
    var r = HealthCheckResponse.named("engine").status(host.isReady() && !drain.draining());
    if (drain.draining()) r.withData("draining", true);
    if (host.failure() != null) r.withData("error", host.failure());
    return r.build();
  }
}
