package io.moemesh.engine;

import io.moemesh.engine.kv.KvCacheManager;
import io.moemesh.model.DeepseekModel;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The in-process engine: one step-loop thread runs {@link EngineCore#step()} while requests come and go.
 * {@code submit} validates on the caller's thread (a bad request fails at once, with a message for the
 * client) and hands the request to the loop; outputs reach the request's listener on the loop thread.
 * {@code abort} works in any state and frees the request's pages before the next step.
 */
public final class Engine implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(Engine.class.getName());

  /** Receives a request's outputs, in order, on the step-loop thread: must return quickly and never block. */
  @FunctionalInterface
  public interface OutputListener {
    void onOutput(RequestOutput output);
  }

  private final EngineCore core;
  private final LinkedBlockingQueue<Runnable> commands = new LinkedBlockingQueue<>();
  private final Map<String, OutputListener> listeners = new ConcurrentHashMap<>();
  private final Thread loop;
  private volatile EngineStats stats;
  private volatile boolean closed;

  public Engine(EngineCore core, String name) {
    this.core = core;
    core.onLoadResult(() -> commands.add(() -> {})); // wake the loop to apply it
    this.stats = core.stats();
    this.loop = Thread.ofPlatform().name(name).daemon().unstarted(this::run);
    loop.start();
  }

  /**
   * An engine as {@code spec} describes it, its step loop started.
   *
   * @throws IllegalArgumentException if the spec asks for speculative decoding and the model has no MTP layer
   */
  public static Engine create(EngineSpec spec) {
    DeepseekModel model = spec.model();
    KvCacheConfig kv = spec.kvCache();
    int speculativeTokens = spec.speculativeTokens();
    DeepseekRunner.checkSpeculation(model, speculativeTokens); // before the cache's memory is taken
    var manager = new KvCacheManager(kv.numPages(), kv.pageSize(), model.modelId(), kv.prefixCaching(), speculativeTokens > 0);
    var runner = new DeepseekRunner(model, spec.experts(), kv, spec.connector(), spec.observer().orElse(null), spec.microBatchThreshold(),
        speculativeTokens);
    var scheduler = new Scheduler(spec.scheduler(), manager, ModelLimits.of(model.config()), speculativeTokens);
    return new Engine(new EngineCore(scheduler, runner, manager, spec.connector()), "engine-step");
  }

  /**
   * Queues a request whose outputs go to {@code listener}.
   *
   * @throws IllegalArgumentException if the request can never run (its message is for the client)
   * @throws IllegalStateException if the engine is closed
   */
  public void submit(GenerationRequest request, OutputListener listener) {
    if (closed) throw new IllegalStateException("the engine is shut down");
    core.validate(request);
    if (listeners.putIfAbsent(request.id(), listener) != null)
      throw new IllegalArgumentException("request id " + request.id() + " is already in use");
    commands.add(() -> add(request));
  }

  private void add(GenerationRequest request) {
    try {
      core.add(request);
    } catch (RuntimeException e) {
      deliver(new RequestOutput(request.id(), List.of(), RequestStatus.FINISHED_ERROR, new Usage(request.numPromptTokens(), 0, 0),
          e.getMessage()));
    }
  }

  /** The checks {@code submit} makes before queueing, without queueing: a request that passes can be submitted. */
  public void validate(GenerationRequest request) {
    core.validate(request);
  }

  /**
   * Several requests that reach the scheduler together, before its next step (a client's n choices, a batch
   * job): all are validated first, and none is queued if one is invalid.
   */
  public List<RequestStream> submitAll(List<GenerationRequest> requests) {
    if (closed) throw new IllegalStateException("the engine is shut down");
    var ids = new java.util.HashSet<String>();
    for (GenerationRequest r : requests) {
      core.validate(r);
      if (!ids.add(r.id()) || listeners.containsKey(r.id())) throw new IllegalArgumentException("request id " + r.id() + " is already in use");
    }
    List<RequestStream> streams = new java.util.ArrayList<>();
    for (GenerationRequest r : requests) {
      var stream = new RequestStream(r.id());
      if (listeners.putIfAbsent(r.id(), stream) != null) { // taken meanwhile by a concurrent submit
        streams.forEach(s -> listeners.remove(s.requestId()));
        throw new IllegalArgumentException("request id " + r.id() + " is already in use");
      }
      streams.add(stream);
    }
    commands.add(() -> {
      for (GenerationRequest r : requests) add(r);
    });
    return streams;
  }

  /** {@link #submit(GenerationRequest, OutputListener)} into a blocking stream. */
  public RequestStream submit(GenerationRequest request) {
    var stream = new RequestStream(request.id());
    submit(request, stream);
    return stream;
  }

  /** Aborts a request in whatever state it is; its listener gets a {@link RequestStatus#FINISHED_ABORTED} output. */
  public void abort(String requestId) {
    commands.add(() -> core.abort(requestId).ifPresent(this::deliver));
  }

  /** Tells {@code observer} about each step from the next one on, on the step thread (engine-host: a trace span per step). */
  public void observeSteps(StepObserver observer) {
    core.observeSteps(observer);
  }

  /** The figures after the last step. */
  public EngineStats stats() {
    return stats;
  }

  private void run() {
    while (!closed) {
      try {
        Runnable command = core.hasWork() ? commands.poll() : commands.take();
        for (; command != null; command = commands.poll()) command.run();
        for (RequestOutput out : core.step()) deliver(out);
        stats = core.stats();
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException | Error e) { // a bug, not a request's fault: fail what is live, keep serving
        LOG.log(Level.SEVERE, "engine step failed", e);
        for (String id : List.copyOf(listeners.keySet()))
          core.fail(id, "internal engine error: " + e).ifPresent(this::deliver);
      }
    }
  }

  private void deliver(RequestOutput out) {
    OutputListener listener = out.finished() ? listeners.remove(out.requestId()) : listeners.get(out.requestId());
    if (listener == null) return;
    try {
      listener.onOutput(out);
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "listener of request " + out.requestId() + " failed; aborting the request", e);
      if (!out.finished()) core.abort(out.requestId()).ifPresent(this::deliver);
    }
  }

  /** Stops the loop; requests still live finish as {@link RequestStatus#FINISHED_ABORTED}. */
  @Override
  public void close() {
    commands.add(() -> {
      for (String id : List.copyOf(listeners.keySet())) core.abort(id).ifPresent(this::deliver);
      closed = true;
    });
    try {
      loop.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return; // the loop still owns the core; it stops at the close command
    }
    core.close();
  }
}
