package io.moemesh.expert;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.ExpertWeights;
import io.moemesh.model.ModelConfig;
import io.moemesh.model.ModelConfigReader;
import io.moemesh.model.moe.ExpertDispatch;
import io.moemesh.model.moe.ExpertSelection;
import io.moemesh.model.moe.Placement;
import io.moemesh.model.moe.balance.ExpertLoad;
import io.moemesh.proto.expert.v1.CombineFrame;
import io.moemesh.proto.expert.v1.DispatchFrame;
import io.moemesh.proto.expert.v1.SharedFrame;
import io.moemesh.proto.tensor.WireTensors;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Scope;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import org.jboss.logging.Logger;

/**
 * The experts this process holds and the one thread that computes them (the kernels split each op over
 * the cores; frames from every stream queue here in arrival order). A routed shard holds the experts of its
 * slots under the newest prepared placement (plus those of older versions still in use); the shared role
 * holds every MoE layer's shared experts. Loading runs off the startup thread; until it ends, readiness is down. A
 * routed shard restarted into a running mesh resumes its peers' newest placement ({@link StartingPlacement}).
 */
@ApplicationScoped
public class ExpertHost {
  private static final Logger LOG = Logger.getLogger(ExpertHost.class);
  private static final java.time.Duration PEER_TIMEOUT = java.time.Duration.ofSeconds(5); // a peer's Info at startup
  @Inject ExpertConfig config;
  @Inject ExpertMetrics metrics;

  private final ExecutorService compute = Executors.newSingleThreadExecutor(Thread.ofPlatform().name("expert-compute").factory());
  private volatile Kernels kernels;
  private volatile ModelConfig model;
  private volatile Held held;            // swapped whole by prepare()
  private volatile String failure;
  private volatile ExpertLoad load;
  private final AtomicLong framesSinceAdvance = new AtomicLong();
  private final Map<Long, Long> lastFrameNanos = new ConcurrentHashMap<>(); // placement version → its last dispatch frame

  /** The weights and the placement they were loaded for (null placement in the shared role). */
  record Held(ExpertWeights weights, Placement placement) {}

  void start(@Observes StartupEvent event) {
    Thread.ofPlatform().name("expert-load").start(() -> {
      try {
        long start = System.nanoTime();
        kernels = config.kernels().open(config.threads().orElse(Runtime.getRuntime().availableProcessors()));
        metrics.kernels(kernels.path());
        model = ModelConfigReader.read(config.modelDir().resolve("config.json"));
        Placement placement = config.role() == ExpertConfig.Role.ROUTED
            ? StartingPlacement.choose(ExpertWeights.initialPlacement(model, config.numShards(), config.redundantSlots()), config.shard(),
                config.peers().orElse(List.of()), PEER_TIMEOUT)
            : null;
        ExpertSelection selection = placement == null ? ExpertSelection.SHARED_ONLY : ExpertSelection.shard(placement, config.shard());
        held = new Held(ExpertWeights.load(config.modelDir(), config.precision(), kernels, selection, null), placement);
        boolean[] moe = new boolean[ExpertWeights.numLayers(model)];
        for (int i = 0; i < moe.length; i++) moe[i] = model.isMoeLayer(i);
        load = new ExpertLoad(moe, model.nRoutedExperts(), 8);
        if (placement != null) metrics.preparedVersion(() -> held.placement().version());
        LOG.infof("experts ready: %s %s (kernels %s) in %.1f s", config.role(), config.role() == ExpertConfig.Role.ROUTED
            ? "shard " + config.shard() + "/" + config.numShards() : "", kernels.name(), (System.nanoTime() - start) / 1e9);
      } catch (RuntimeException e) {
        failure = e.getMessage();
        LOG.error("experts failed to load", e);
      }
    });
  }

  /**
   * Frees the weights and the kernels once nothing can use them: synchronized with {@link #prepare} (a placement being
   * loaded while the service stops used to quantize with a closed context), and after the compute thread's last call.
   */
  synchronized void stop(@Observes ShutdownEvent event) {
    compute.shutdownNow();
    try {
      if (!compute.awaitTermination(30, java.util.concurrent.TimeUnit.SECONDS)) {
        LOG.warn("a compute task outlived 30 s of shutdown: the weights and kernels are left to the process's exit");
        return;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    }
    Held h = held;
    if (h != null) h.weights().close();
    if (kernels != null) kernels.close();
  }

  public boolean isReady() {
    return held != null;
  }

  public String failure() {
    return failure;
  }

  ExecutorService executor() {
    return compute;
  }

  ExpertConfig config() {
    return config;
  }

  Held held() {
    Held h = held;
    if (h == null) throw new IllegalStateException(failure == null ? "the experts are still loading" : "the experts failed to load: " + failure);
    return h;
  }

  ModelConfig model() {
    held();
    return model;
  }

  ExpertLoad load() {
    held();
    return load;
  }

  /**
   * Runs a dispatch frame (on the compute thread) that arrived at {@code arrivedNanos}: one output row per assignment, or
   * an error frame saying why; counted into its step's span on {@code steps}.
   */
  CombineFrame routed(DispatchFrame frame, long arrivedNanos, StepSpans.Stream steps) {
    Span span = steps.begin(frame.getTraceparent(), arrivedNanos);
    long start = System.nanoTime();
    try (Scope ignored = StepSpans.current(span)) { // around the catch too: its log line carries the frame's trace
      Computed c = computeRouted(frame, start);
      steps.done(new StepSpans.Frame(frame.getLayerId(), frame.getPlacementVersion(), c.tokens, c.rows, frame.getSerializedSize(),
          c.answer.getSerializedSize(), arrivedNanos, start, System.nanoTime(), c.answer.getError().isEmpty() ? null : c.answer.getError()));
      return c.answer;
    }
  }

  /** A frame's answer, and the tokens it dispatched and the rows it answered (0 for an error). */
  private record Computed(CombineFrame answer, long tokens, long rows) {}

  private Computed computeRouted(DispatchFrame frame, long start) {
    try (TensorArena scratch = TensorArena.confined()) {
      if (config.role() != ExpertConfig.Role.ROUTED) throw new IllegalArgumentException("this is a shared-expert service: send SharedFrames");
      Held h = held();
      lastFrameNanos.put(frame.getPlacementVersion(), System.nanoTime());
      Tensor hidden = KernelTensors.read(frame.getHidden(), "hidden", 2, scratch);
      Tensor scales = frame.hasScales() ? KernelTensors.read(frame.getScales(), "scales", DType.F32, 1, scratch) : null;
      checkLayer(frame.getLayerId(), hidden);
      var groups = new ExpertDispatch.Groups(WireTensors.readInts(frame.getExperts(), "experts"),
          WireTensors.readInts(frame.getExpertEnds(), "expert_ends"));
      var dispatch = new ExpertDispatch(frame.getLayerId(), frame.getPlacementVersion(), hidden, scales,
          groups.expertOffsets(model.nRoutedExperts()), WireTensors.readInts(frame.getTokenIndex(), "token_index"));
      Tensor out = h.weights().experts().compute(kernels, dispatch, scratch);
      int[] counts = new int[dispatch.numExperts()];
      for (int e = 0; e < counts.length; e++) counts[e] = dispatch.count(e);
      load.record(frame.getLayerId(), counts);
      if (framesSinceAdvance.incrementAndGet() >= (long) config.loadWindow() * numMoeLayers() / load.windowBuckets()) {
        framesSinceAdvance.set(0);
        load.advance();
      }
      metrics.frame("routed", frame.getSerializedSize(), dispatch.numAssignments(), System.nanoTime() - start);
      metrics.dispatchParts("routed", frame.getHidden().getData().size(), frame.getScales().getData().size(),
          frame.getExperts().getData().size() + frame.getExpertEnds().getData().size() + frame.getTokenIndex().getData().size());
      return new Computed(CombineFrame.newBuilder().setSeq(frame.getSeq()).setOutputs(KernelTensors.write(out)).build(), hidden.dim(0),
          dispatch.numAssignments());
    } catch (RuntimeException e) {
      metrics.failed("routed");
      failed("dispatch", frame.getSeq(), frame.getLayerId(), e);
      return new Computed(CombineFrame.newBuilder().setSeq(frame.getSeq()).setError(message(e)).build(), 0, 0);
    }
  }

  /** Runs a shared-experts frame (on the compute thread) that arrived at {@code arrivedNanos}: one output row per token. */
  CombineFrame shared(SharedFrame frame, long arrivedNanos, StepSpans.Stream steps) {
    Span span = steps.begin(frame.getTraceparent(), arrivedNanos);
    long start = System.nanoTime();
    try (Scope ignored = StepSpans.current(span)) {
      Computed c = computeShared(frame, start);
      steps.done(new StepSpans.Frame(frame.getLayerId(), -1, c.tokens, c.rows, frame.getSerializedSize(), c.answer.getSerializedSize(),
          arrivedNanos, start, System.nanoTime(), c.answer.getError().isEmpty() ? null : c.answer.getError()));
      return c.answer;
    }
  }

  private Computed computeShared(SharedFrame frame, long start) {
    try (TensorArena scratch = TensorArena.confined()) {
      if (config.role() != ExpertConfig.Role.SHARED) throw new IllegalArgumentException("this is a routed-expert shard: send DispatchFrames");
      Held h = held();
      Tensor hidden = KernelTensors.read(frame.getHidden(), "hidden", 2, scratch);
      checkLayer(frame.getLayerId(), hidden);
      Tensor out = scratch.allocate(DType.F32, hidden.dim(0), hidden.dim(1));
      var experts = h.weights().experts();
      if (hidden.dtype() == DType.I8) {
        if (!frame.hasScales()) throw new IllegalArgumentException("I8 hidden states need scales");
        Tensor scales = KernelTensors.read(frame.getScales(), "scales", DType.F32, 1, scratch);
        if (scales.dim(0) != hidden.dim(0)) throw new IllegalArgumentException(scales.dim(0) + " scales for " + hidden.dim(0) + " tokens");
        if (!experts.sharedIsInt8(frame.getLayerId())) throw new IllegalArgumentException("INT8 hidden states for experts in " + config.precision());
        experts.sharedQuantized(kernels, frame.getLayerId(), out, hidden, scales, scratch);
      } else if (hidden.dtype() == DType.F32) {
        experts.shared(kernels, frame.getLayerId(), out, hidden, scratch);
      } else {
        throw new IllegalArgumentException("hidden states must be I8 or F32, got " + hidden.dtype());
      }
      Tensor wire = out;
      if (experts.outputDType() != DType.F32) {
        wire = scratch.allocate(experts.outputDType(), hidden.dim(0), hidden.dim(1));
        kernels.convert(wire, out);
      }
      metrics.frame("shared", frame.getSerializedSize(), hidden.dim(0), System.nanoTime() - start);
      metrics.dispatchParts("shared", frame.getHidden().getData().size(), frame.getScales().getData().size(), 0);
      return new Computed(CombineFrame.newBuilder().setSeq(frame.getSeq()).setOutputs(KernelTensors.write(wire)).build(), hidden.dim(0),
          hidden.dim(0));
    } catch (RuntimeException e) {
      metrics.failed("shared");
      failed("shared", frame.getSeq(), frame.getLayerId(), e);
      return new Computed(CombineFrame.newBuilder().setSeq(frame.getSeq()).setError(message(e)).build(), 0, 0);
    }
  }

  /**
   * Live rebalancing, step 1: loads the experts {@code next} assigns this shard, keeping those of the placement
   * prepared before (attention replicas may still use it until the balancer publishes {@code next}), then swaps
   * them in; frames queued before keep the old weights until they are done. Preparing the newest version again
   * with the same slots does nothing; an older version, or the same one with other slots, is refused. Returns
   * the number of experts this shard serves under {@code next}.
   */
  synchronized int prepare(Placement next) {
    Held h = held();
    if (config.role() != ExpertConfig.Role.ROUTED) throw new IllegalArgumentException("only routed shards take placements");
    if (next.numShards() != config.numShards() || next.numExperts() != model.nRoutedExperts())
      throw new IllegalArgumentException("placement for " + next.numShards() + " shards × " + next.numExperts() + " experts; this mesh has "
          + config.numShards() + " × " + model.nRoutedExperts());
    for (int layer = 0; layer < next.numLayers(); layer++)
      if (next.isMoeLayer(layer) != model.isMoeLayer(layer))
        throw new IllegalArgumentException("the placement " + (next.isMoeLayer(layer) ? "has" : "lacks") + " layer " + layer
            + ", which is " + (model.isMoeLayer(layer) ? "a MoE layer" : "dense"));
    long newest = h.placement().version();
    if (next.version() == newest && PlacementTables.sameSlots(next, h.placement())) return servedExperts(next);
    if (next.version() <= newest)
      throw new IllegalArgumentException("placement version " + next.version() + " is not above the newest prepared here, " + newest
          + (next.version() == newest ? ", which has other slots" : ""));
    ExpertSelection now = ExpertSelection.shard(h.placement(), config.shard()), then = ExpertSelection.shard(next, config.shard());
    ExpertSelection both = new ExpertSelection() {
      @Override
      public boolean routed(int layerId, int expert) {
        return now.routed(layerId, expert) || then.routed(layerId, expert);
      }

      @Override
      public boolean shared(int layerId) {
        return false;
      }
    };
    long start = System.nanoTime();
    var weights = ExpertWeights.load(config.modelDir(), config.precision(), kernels, both, null);
    held = new Held(weights, next);
    compute.execute(() -> h.weights().close()); // after every frame queued before the swap
    LOG.infof("placement version %d prepared in %.2f s (version %d kept)", next.version(), (System.nanoTime() - start) / 1e9, newest);
    return servedExperts(next);
  }

  /** The placement versions of this shard's recent dispatch frames, newest first, with how long each has been idle. */
  List<VersionInUse> placementsInUse() {
    long now = System.nanoTime();
    List<VersionInUse> out = new ArrayList<>();
    lastFrameNanos.forEach((version, last) -> {
      long idleMillis = (now - last) / 1_000_000;
      if (idleMillis > 3_600_000) lastFrameNanos.remove(version, last); // an hour without frames: long gone
      else out.add(new VersionInUse(version, idleMillis));
    });
    out.sort(Comparator.comparingLong(VersionInUse::version).reversed());
    return out;
  }

  record VersionInUse(long version, long idleMillis) {}

  /** Experts (summed over MoE layers) this shard serves under {@code p}. */
  private int servedExperts(Placement p) {
    int n = 0;
    for (int layer = 0; layer < p.numLayers(); layer++)
      if (p.isMoeLayer(layer)) n += p.expertsOnShard(layer, config.shard()).length;
    return n;
  }

  private void checkLayer(int layerId, Tensor hidden) {
    if (layerId < 0 || layerId >= ExpertWeights.numLayers(model) || !model.isMoeLayer(layerId))
      throw new IllegalArgumentException("layer " + layerId + " is not a MoE layer of " + config.modelDir().getFileName());
    if (hidden.dim(1) != model.hiddenSize())
      throw new IllegalArgumentException("hidden states of width " + hidden.dim(1) + ", the model's is " + model.hiddenSize());
  }

  private int numMoeLayers() {
    int n = 0;
    for (int i = 0; i < ExpertWeights.numLayers(model); i++) if (model.isMoeLayer(i)) n++;
    return n;
  }

  /** The warning of a frame answered with an error frame; logged while its span is current, so it carries the trace id. */
  private static void failed(String kind, long seq, int layerId, RuntimeException e) {
    LOG.warnf("%s frame %d (layer %d) answered with an error: %s", kind, seq, layerId, message(e));
  }

  private static String message(RuntimeException e) {
    return e.getMessage() != null ? e.getMessage() : e.toString();
  }
}
