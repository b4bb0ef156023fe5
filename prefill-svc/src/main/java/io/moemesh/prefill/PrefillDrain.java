package io.moemesh.prefill;

import io.moemesh.enginehost.Drain;
import io.quarkus.runtime.ShutdownEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.time.Duration;

/**
 * SIGTERM drains the replica before anything stops ({@link Drain}): the gateways stop routing prompts here at once, the
 * prompts in flight finish for up to {@code moemesh.prefill.drain-timeout}, the rest are aborted with the drain marker
 * (the gateway prefills them elsewhere). Observed first among the shutdown observers, while the gRPC server still serves and before the
 * engine closes (which would abort what still runs).
 */
@ApplicationScoped
public class PrefillDrain {
  @Inject Drain drain;

  @Inject PrefillConfig config;

  void onShutdown(@Observes @Priority(1) ShutdownEvent event) {
    drain.drain(config.drainTimeout());
  }

  Duration timeout() {
    return config.drainTimeout();
  }
}
