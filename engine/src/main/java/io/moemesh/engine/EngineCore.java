package io.moemesh.engine;

import io.moemesh.engine.kv.KvCacheManager;
import io.moemesh.engine.kv.KvCacheUsage;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The step loop's body: {@code schedule() → runner.execute(plan) → scheduler.update(plan, output)}.
 * Single-threaded; {@link Engine} runs it on its own thread behind a submit/stream API.
 */
public final class EngineCore implements AutoCloseable {
  private final Scheduler scheduler;
  private final ModelRunner runner;
  private final KvCacheManager kv;
  private final KvConnector connector;
  private final ConcurrentLinkedQueue<LoadResult> loadResults = new ConcurrentLinkedQueue<>();
  private volatile Runnable wakeup = () -> {};
  private volatile StepObserver observer = StepObserver.NONE;
  private long steps, promptTokens, generatedTokens;

  private record LoadResult(String requestId, KvLoadResult result) {}

  public EngineCore(Scheduler scheduler, ModelRunner runner, KvCacheManager kv, KvConnector connector) {
    this.scheduler = scheduler;
    this.runner = runner;
    this.kv = kv;
    this.connector = connector;
  }

  public EngineCore(Scheduler scheduler, ModelRunner runner, KvCacheManager kv) {
    this(scheduler, runner, kv, KvConnector.NONE);
  }

  /** Called (on any thread) when a KV load ends, so a step loop idling on an empty queue wakes up. */
  void onLoadResult(Runnable wakeup) {
    this.wakeup = wakeup;
  }

  /** Who is told about each step the runner executes (engine-host: its trace span). */
  void observeSteps(StepObserver observer) {
    this.observer = observer;
  }

  /** Runs one step; returns the updates of every request that gained a token or finished. */
  public List<RequestOutput> step() {
    List<RequestOutput> outputs = new ArrayList<>();
    for (LoadResult r; (r = loadResults.poll()) != null; ) scheduler.kvLoaded(r.requestId(), r.result()).ifPresent(outputs::add);
    if (!scheduler.hasWork()) return outputs;
    SchedulerOutput plan = scheduler.schedule();
    for (SchedulerOutput.KvLoad load : plan.loads()) startLoad(load);
    if (plan.isEmpty()) return outputs;
    RunnerOutput out = null;
    RuntimeException failure = null;
    try (StepObserver.Step step = observer.begin(plan)) {
      try {
        out = runner.execute(plan);
      } catch (RuntimeException e) {
        step.failed(e);
        failure = e;
      }
    }
    if (failure != null) out = isolate(plan, failure);
    steps++;
    for (ScheduledChunk c : plan.chunks()) {
      promptTokens += Math.max(0, Math.min(c.numPromptTokens(), c.startPosition() + c.numTokens()) - c.startPosition());
      if (c.samples()) generatedTokens += 1 + out.acceptedOf(c.requestId()).size();
    }
    outputs.addAll(scheduler.update(plan, out));
    return outputs;
  }

  private void startLoad(SchedulerOutput.KvLoad load) {
    var once = new java.util.concurrent.atomic.AtomicBoolean();
    try {
      connector.load(load.requestId(), load.numTokens(), runner.kvSink(load.blockTable(), load.numTokens(), load.withMtpLayer()), result -> {
        if (!once.compareAndSet(false, true)) return; // a connector calling twice must not free pages twice
        loadResults.add(new LoadResult(load.requestId(),
            result != null ? result : KvLoadResult.failed(KvLoadResult.Reason.ERROR, "the KV connector reported no result")));
        wakeup.run();
      });
    } catch (RuntimeException e) {
      if (once.compareAndSet(false, true))
        loadResults.add(new LoadResult(load.requestId(), KvLoadResult.failed(KvLoadResult.Reason.ERROR, "KV load failed to start: " + e.getMessage())));
    }
  }

  /** Whether a step now would run anything, or has KV load results to apply. */
  public boolean hasWork() {
    return scheduler.hasWork() || !loadResults.isEmpty();
  }

  /**
   * A step that threw: runs each request alone so that only the culprit fails. Rerunning writes the same KV
   * rows again, and by batch invariance the others get exactly the numbers the batch would have given them.
   */
  private RunnerOutput isolate(SchedulerOutput plan, RuntimeException batchFailure) {
    if (plan.chunks().size() == 1) return new RunnerOutput(Map.of(), Map.of(plan.chunks().getFirst().requestId(), describe(batchFailure)));
    Map<String, io.moemesh.model.sampling.SampledToken> sampled = new HashMap<>();
    Map<String, List<io.moemesh.model.sampling.SampledToken>> accepted = new HashMap<>();
    Map<String, List<io.moemesh.model.sampling.Sampler.Draft>> drafts = new HashMap<>();
    Map<String, String> failed = new HashMap<>();
    for (ScheduledChunk chunk : plan.chunks()) {
      try {
        RunnerOutput alone = runner.execute(new SchedulerOutput(List.of(chunk), List.of()));
        sampled.putAll(alone.sampled());
        accepted.putAll(alone.accepted());
        drafts.putAll(alone.drafts());
        failed.putAll(alone.failed());
      } catch (RuntimeException e) {
        failed.put(chunk.requestId(), describe(e));
      }
    }
    return new RunnerOutput(sampled, accepted, drafts, failed);
  }

  private static String describe(RuntimeException e) {
    return "the model failed on this request: " + (e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName());
  }

  public void add(GenerationRequest request) {
    scheduler.add(request);
  }

  public void validate(GenerationRequest request) {
    scheduler.validate(request);
  }

  public Optional<RequestOutput> abort(String id) {
    return scheduler.abort(id);
  }

  public Optional<RequestOutput> fail(String id, String message) {
    return scheduler.fail(id, message);
  }

  public boolean hasRequests() {
    return scheduler.hasRequests();
  }

  public Optional<RequestStatus> status(String id) {
    return scheduler.status(id);
  }

  public EngineStats stats() {
    KvCacheUsage usage = kv.usage();
    return new EngineStats(scheduler.numWaiting(), scheduler.numRunning(), scheduler.numLoadingKv(), scheduler.numQueuedPromptTokens(), usage, steps,
        promptTokens, generatedTokens, scheduler.numPreemptions(), scheduler.specDecodeStats());
  }

  @Override
  public void close() {
    runner.close();
  }
}
