package io.moemesh.expert;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/** Ready once this service's experts are loaded. */
@Readiness
@ApplicationScoped
public class ExpertReadiness implements HealthCheck {
  @Inject ExpertHost host;

  @Override
  public HealthCheckResponse call() {
    var r = HealthCheckResponse.named("experts").status(host.isReady());
    if (host.failure() != null) r.withData("error", host.failure());
    return r.build();
  }
}
