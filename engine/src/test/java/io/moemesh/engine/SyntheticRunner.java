package io.moemesh.engine;

import io.moemesh.model.sampling.SampledToken;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.ToIntBiFunction;

/**
 * A model runner without a model, for scheduler and engine-core tests: the token after position p of request
 * id is {@code next(id, p)}; it records every plan and can be told to fail a request (politely, or by
 * throwing for any batch holding it).
 */
final class SyntheticRunner implements ModelRunner {
  final List<SchedulerOutput> plans = new ArrayList<>();
  final Set<String> failPolitely = new HashSet<>();
  final Set<String> throwFor = new HashSet<>();
  private final ToIntBiFunction<String, Integer> next;

  SyntheticRunner(ToIntBiFunction<String, Integer> next) {
    this.next = next;
  }

  /** Tokens 100 + (position mod 50): never the test vocabulary's EOS (1). */
  SyntheticRunner() {
    this((id, position) -> 100 + position % 50);
  }

  @Override
  public RunnerOutput execute(SchedulerOutput plan) {
    plans.add(plan);
    for (ScheduledChunk c : plan.chunks())
      if (throwFor.contains(c.requestId())) throw new IllegalStateException("boom in " + c.requestId());
    Map<String, SampledToken> sampled = new HashMap<>();
    Map<String, String> failed = new HashMap<>();
    for (ScheduledChunk c : plan.chunks()) {
      if (failPolitely.contains(c.requestId())) failed.put(c.requestId(), "synthetic failure");
      else if (c.samples())
        sampled.put(c.requestId(), new SampledToken(next.applyAsInt(c.requestId(), c.startPosition() + c.numTokens() - 1), Optional.empty()));
    }
    return new RunnerOutput(sampled, failed);
  }
}
