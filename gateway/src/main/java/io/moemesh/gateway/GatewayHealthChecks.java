package io.moemesh.gateway;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;
import org.eclipse.microprofile.health.Readiness;

/** The gateway's health concerns, one check each. */
public final class GatewayHealthChecks {
  private GatewayHealthChecks() {}

  /** Live while the process serves HTTP: nothing in the gateway can wedge short of that. */
  @Liveness
  @ApplicationScoped
  public static class Serving implements HealthCheck {
    @Override
    public HealthCheckResponse call() {
      return HealthCheckResponse.up("gateway");
    }
  }

  /** Ready: the tokenizer is loaded and at least one decode replica answers its Load poll (also vLLM's /health). */
  static boolean ready(ServedModel model, Replicas replicas) {
    return model.tokenizer().vocabSize() > 0 && replicas.anyDecodeReachable();
  }

  /** Ready when the tokenizer is loaded and at least one decode replica answers its Load poll. */
  @Readiness
  @ApplicationScoped
  public static class MeshReachable implements HealthCheck {
    @Inject ServedModel model;
    @Inject Replicas replicas;

    @Override
    public HealthCheckResponse call() {
      var b = HealthCheckResponse.named("gateway model and decode replicas")
          .status(ready(model, replicas))
          .withData("model", model.id());
      for (Replica r : replicas.all()) b.withData(r.toString(), r.reachable() ? "reachable" : "unreachable");
      return b.build();
    }
  }
}
