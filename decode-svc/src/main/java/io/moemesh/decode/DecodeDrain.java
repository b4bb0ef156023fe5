package io.moemesh.decode;

import io.moemesh.enginehost.Drain;
import io.quarkus.runtime.ShutdownEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.time.Duration;

/**
 * SIGTERM drains the replica before anything stops ({@link Drain}): the gateways stop routing here at once, running
 * streams go on for up to {@code moemesh.decode.drain-timeout}, the rest are cut off with the drain marker and continue
 * on another replica. Observed first among the shutdown observers, while the gRPC server still serves and before the
 * engine closes (which would abort what still runs).
 */
@ApplicationScoped
public class DecodeDrain {
  @Inject Drain drain;

  @Inject DecodeConfig config;

  void onShutdown(@Observes @Priority(1) ShutdownEvent event) {
    drain.drain(config.drainTimeout());
  }

  Duration timeout() {
    return config.drainTimeout();
  }
}
