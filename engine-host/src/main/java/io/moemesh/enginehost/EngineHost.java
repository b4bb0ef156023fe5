package io.moemesh.enginehost;

import io.grpc.Status;
import io.moemesh.engine.Engine;
import io.moemesh.engine.EngineSettings;
import io.moemesh.engine.KvConnector;
import io.moemesh.engine.LoadedEngine;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.util.concurrent.atomic.AtomicReference;
import org.eclipse.microprofile.config.ConfigProvider;
import org.jboss.logging.Logger;

/**
 * Loads the model and runs the engine, with the service's {@link KvConnector} bean (prefill: export to
 * kv-store; decode: import from it). Loading runs on its own thread so the process answers health checks
 * meanwhile; readiness turns green when the engine is up. Settings: {@code moemesh.engine.*}
 * ({@link EngineSettings#fromConfig}).
 */
@ApplicationScoped
public class EngineHost {
  private static final Logger LOG = Logger.getLogger(EngineHost.class);
  private final AtomicReference<LoadedEngine> loaded = new AtomicReference<>();
  private final AtomicReference<String> failure = new AtomicReference<>();
  @Inject KvConnector connector;

  void start(@Observes StartupEvent event) {
    Thread.ofPlatform().name("engine-load").start(() -> {
      try {
        var config = ConfigProvider.getConfig();
        EngineSettings settings = EngineSettings.fromConfig("moemesh.engine", key -> config.getOptionalValue(key, String.class));
        long start = System.nanoTime();
        loaded.set(LoadedEngine.open(settings, connector, (done, total) -> {}));
        LOG.infof("engine ready: %s (%s) in %.1f s", settings.modelDir(), settings.precision(), (System.nanoTime() - start) / 1e9);
      } catch (RuntimeException e) {
        failure.set(e.getMessage());
        LOG.error("engine failed to start", e);
      }
    });
  }

  void stop(@Observes ShutdownEvent event) {
    LoadedEngine e = loaded.getAndSet(null);
    if (e != null) e.close();
  }

  /** The running engine, or UNAVAILABLE while it loads (or if it failed to). */
  public LoadedEngine loaded() {
    LoadedEngine e = loaded.get();
    if (e != null) return e;
    String why = failure.get();
    throw Status.UNAVAILABLE.withDescription(why == null ? "the model is still loading" : "the engine failed to start: " + why)
        .asRuntimeException();
  }

  public Engine engine() {
    return loaded().engine();
  }

  public boolean isReady() {
    return loaded.get() != null;
  }

  public String failure() {
    return failure.get();
  }
}
