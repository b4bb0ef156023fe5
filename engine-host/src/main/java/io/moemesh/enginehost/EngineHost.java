package io.moemesh.enginehost;

import io.grpc.Status;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.moemesh.engine.Engine;
import io.moemesh.engine.EngineSettings;
import io.moemesh.engine.KvConnector;
import io.moemesh.engine.LoadedEngine;
import io.moemesh.engine.experts.DispatchingExperts;
import io.moemesh.engine.experts.ExpertTransport;
import io.moemesh.enginehost.experts.ExpertsSettings;
import io.moemesh.enginehost.experts.GrpcExpertTransport;
import io.moemesh.enginehost.experts.PlacementWatcher;
import io.moemesh.enginehost.telemetry.ExpertRetries;
import io.moemesh.enginehost.telemetry.StepTracing;
import io.moemesh.model.ExpertWeights;
import io.moemesh.model.ModelConfig;
import io.moemesh.model.ModelConfigReader;
import io.moemesh.model.Precision;
import io.moemesh.model.moe.ExpertSelection;
import io.moemesh.model.moe.Placement;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.util.concurrent.atomic.AtomicReference;
import org.jboss.logging.Logger;

/**
 * Loads the model and runs the engine, with the service's {@link KvConnector} bean (prefill: export to
 * kv-store; decode: import from it). Loading runs on its own thread so the process answers health checks
 * meanwhile; readiness turns green when the engine is up. Settings: {@link EngineConfig} ({@code moemesh.engine.*})
 * and {@link ExpertsConfig} ({@code moemesh.experts.*}), checked before loading starts so a bad value fails startup.
 */
@ApplicationScoped
public class EngineHost {
  private static final Logger LOG = Logger.getLogger(EngineHost.class);
  private final AtomicReference<LoadedEngine> loaded = new AtomicReference<>();
  private final AtomicReference<String> failure = new AtomicReference<>();
  @Inject KvConnector connector;
  @Inject MeterRegistry registry;
  @Inject ExpertRetries retries;
  @Inject EngineConfig engineConfig;
  @Inject ExpertsConfig expertsConfig;
  @Inject StepTracing steps;
  @Inject PlacementWatcher placementWatcher;
  private volatile ExpertTransport transport; // the links to expert services, when the experts are remote
  private volatile DispatchingExperts dispatching; // the MoE layers' experts, when they are remote

  void start(@Observes StartupEvent event) {
    EngineSettings settings = engineConfig.settings();
    ExpertsSettings experts = expertsConfig.settings();
    placementWatcher.start(experts, expertsConfig.placementPoll());
    Thread.ofPlatform().name("engine-load").start(() -> {
      try {
        long start = System.nanoTime();
        LoadedEngine engine = experts.routedRemote() ? openWithRemoteExperts(settings, experts) : LoadedEngine.open(settings, connector, (done, total) -> {});
        Gauge.builder("moemesh_kernels_info", () -> 1).description("The kernels' instruction-set path (label path), 1")
            .tag("path", engine.kernels().path()).tag("threads", Integer.toString(settings.threads())).register(registry);
        loaded.set(engine);
        if (dispatching != null) placementWatcher.follow(dispatching);
        LOG.infof("engine ready: %s (%s, experts %s, kernels %s) in %.1f s", settings.modelDir(), settings.precision(),
            experts.routedRemote() ? "on " + experts.shards().size() + " shards, shared " + (experts.sharedRemote() ? "remote" : "local") : "local",
            engine.kernels().name(), (System.nanoTime() - start) / 1e9);
      } catch (RuntimeException e) {
        failure.set(e.getMessage());
        LOG.error("engine failed to start", e);
      }
    });
  }

  /**
   * Attention here, routed experts (and, if so configured, shared experts) on expert services: only the
   * experts that stay local are loaded; the starting placement is the one the balancer has published, if any,
   * else the shards' starting one (checked by the transport).
   */
  private LoadedEngine openWithRemoteExperts(EngineSettings settings, ExpertsSettings experts) {
    ModelConfig model = ModelConfigReader.read(settings.modelDir().resolve("config.json"));
    ExpertTransport transport = GrpcExpertTransport.connect(experts, settings.precision());
    this.transport = transport;
    try {
      Placement placement = PlacementWatcher.active(experts, model)
          .orElseGet(() -> ExpertWeights.initialPlacement(model, experts.shards().size(), experts.redundantSlots()));
      LoadedEngine engine = LoadedEngine.open(settings, connector, experts.sharedRemote() ? ExpertSelection.NONE : ExpertSelection.SHARED_ONLY,
          m -> {
            dispatching = new DispatchingExperts(transport, placement, experts.sharedRemote() ? null : m.localExperts(),
                settings.precision() == Precision.INT8, experts.timeout(), experts.stepDeadline());
            dispatching.onRetry(retries);
            return dispatching;
          }, (done, total) -> {});
      engine.engine().observeSteps(steps); // a span per step, whose context the frames to the expert services carry
      return engine;
    } catch (RuntimeException e) {
      transport.close();
      throw e;
    }
  }

  void stop(@Observes ShutdownEvent event) {
    LoadedEngine e = loaded.getAndSet(null);
    if (e != null) e.close();
    if (transport != null) transport.close();
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

  /** The served model's name ({@code gen_ai.request.model} on the engine's spans), "unknown" while it loads. */
  public String modelName() {
    LoadedEngine e = loaded.get();
    return e != null ? e.model().modelId() : "unknown";
  }

  public boolean isReady() {
    return loaded.get() != null;
  }

  public String failure() {
    return failure.get();
  }
}
