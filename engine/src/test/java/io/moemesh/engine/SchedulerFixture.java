package io.moemesh.engine;

import io.moemesh.engine.kv.KvCacheManager;
import io.moemesh.model.sampling.SamplingParams;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** A scheduler over a synthetic runner: vocabulary 1000, EOS 1, context 4096 unless told otherwise. */
final class SchedulerFixture {
  static final ModelLimits LIMITS = new ModelLimits(1000, 4096, new int[] {1});

  final KvCacheManager kv;
  final Scheduler scheduler;
  final SyntheticRunner runner;
  final EngineCore core;
  final Map<String, List<Integer>> tokens = new HashMap<>();
  final Map<String, RequestOutput> finished = new HashMap<>();

  SchedulerFixture(SchedulerConfig config, int numPages, int pageSize, boolean prefixCaching, ModelLimits limits, SyntheticRunner runner) {
    this.kv = new KvCacheManager(numPages, pageSize, "test-model", prefixCaching);
    this.scheduler = new Scheduler(config, kv, limits);
    this.runner = runner;
    this.core = new EngineCore(scheduler, runner, kv);
  }

  SchedulerFixture(SchedulerConfig config, int numPages, int pageSize) {
    this(config, numPages, pageSize, true, LIMITS, new SyntheticRunner());
  }

  static SchedulerConfig budget(int maxBatchedTokens) {
    return SchedulerConfig.defaults().withMaxBatchedTokens(maxBatchedTokens);
  }

  /** A prompt of {@code length} tokens in [2, 992), different for each id. */
  static int[] prompt(String id, int length) {
    int[] t = new int[length];
    for (int i = 0; i < length; i++) t[i] = 2 + Math.floorMod(id.hashCode() * 31 + i * 17, 990);
    return t;
  }

  static GenerationRequest request(String id, int promptLength, int maxTokens) {
    return GenerationRequest.of(id, prompt(id, promptLength), SamplingParams.greedy(), maxTokens);
  }

  void add(GenerationRequest... requests) {
    for (GenerationRequest r : requests) core.add(r);
  }

  /** One step; returns its plan and records what came out. */
  SchedulerOutput step() {
    int before = runner.plans.size();
    record(core.step());
    return runner.plans.size() > before ? runner.plans.getLast() : new SchedulerOutput(List.of(), List.of());
  }

  void record(List<RequestOutput> outputs) {
    for (RequestOutput out : outputs) {
      var list = tokens.computeIfAbsent(out.requestId(), k -> new ArrayList<>());
      for (int t : out.tokenIds()) list.add(t);
      if (out.finished()) finished.put(out.requestId(), out);
    }
  }

  void runToCompletion() {
    for (int i = 0; i < 10_000 && core.hasRequests(); i++) step();
    if (core.hasRequests()) throw new AssertionError("requests still live after 10000 steps");
  }

  /** Tokens scheduled per request in a plan. */
  static Map<String, Integer> scheduled(SchedulerOutput plan) {
    Map<String, Integer> m = new HashMap<>();
    for (ScheduledChunk c : plan.chunks()) m.put(c.requestId(), c.numTokens());
    return m;
  }

  static ScheduledChunk chunkOf(SchedulerOutput plan, String id) {
    return plan.chunks().stream().filter(c -> c.requestId().equals(id)).findFirst()
        .orElseThrow(() -> new AssertionError(id + " not in the plan " + scheduled(plan)));
  }
}
