package io.moemesh.engine;

import static io.moemesh.engine.SchedulerFixture.chunkOf;
import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.engine.kv.KvCacheManager;
import io.moemesh.model.sampling.SampledToken;
import io.moemesh.model.sampling.Sampler;
import io.moemesh.model.sampling.SamplingParams;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The scheduler's speculative arithmetic with a model-free runner: the token after position p is {@code 100 + p % 50};
 * drafts are right except at the draft positions listed in {@code wrongAt}, and verification accepts the longest
 * right prefix, as greedy verification does.
 */
class SpeculativeSchedulerTest {
  static int next(int position) {
    return 100 + position % 50;
  }

  /** Proposes {@code numToPropose} drafts, the {@code wrongAt}-th (0-based, per step) wrong; verifies greedily. */
  static final class DraftingRunner implements ModelRunner {
    final List<SchedulerOutput> plans = new ArrayList<>();
    int wrongAt = Integer.MAX_VALUE;

    @Override
    public RunnerOutput execute(SchedulerOutput plan) {
      plans.add(plan);
      Map<String, SampledToken> sampled = new HashMap<>();
      Map<String, List<SampledToken>> accepted = new HashMap<>();
      Map<String, List<Sampler.Draft>> drafts = new HashMap<>();
      for (ScheduledChunk c : plan.chunks()) {
        if (!c.samples()) continue;
        int fed = c.startPosition() + c.numTokens() - 1 - c.numDraftTokens(); // the last real token's position
        List<SampledToken> ok = new ArrayList<>();
        for (Sampler.Draft d : c.speculation().drafts()) {
          if (d.tokenId() != next(fed + ok.size())) break;
          ok.add(new SampledToken(d.tokenId(), Optional.empty()));
        }
        int last = fed + ok.size(); // the position whose next token is sampled now
        accepted.put(c.requestId(), ok);
        sampled.put(c.requestId(), new SampledToken(next(last), Optional.empty()));
        List<Sampler.Draft> proposal = new ArrayList<>();
        for (int j = 0; j < c.speculation().numToPropose(); j++)
          proposal.add(new Sampler.Draft(j == wrongAt ? 7 : next(last + 1 + j), null, 1));
        drafts.put(c.requestId(), proposal);
      }
      return new RunnerOutput(sampled, accepted, drafts, Map.of());
    }
  }

  final KvCacheManager kv = new KvCacheManager(64, 4, "test-model", true, true);
  final DraftingRunner runner = new DraftingRunner();

  Scheduler scheduler(int budget, int k) {
    return new Scheduler(SchedulerConfig.defaults().withMaxBatchedTokens(budget), kv, SchedulerFixture.LIMITS, k);
  }

  static List<Integer> run(EngineCore core, String id, Map<String, RequestOutput> finished) {
    List<Integer> tokens = new ArrayList<>();
    for (int i = 0; i < 1000 && core.hasRequests(); i++)
      for (RequestOutput out : core.step()) {
        if (!out.requestId().equals(id)) continue;
        for (int t : out.tokenIds()) tokens.add(t);
        if (out.finished()) finished.put(id, out);
      }
    return tokens;
  }

  static List<Integer> expected(int promptLength, int n) {
    List<Integer> t = new ArrayList<>();
    for (int i = 0; i < n; i++) t.add(next(promptLength - 1 + i));
    return t;
  }

  @Test
  void rightDraftsEmitKPlusOneTokensAStepAndLeaveNoPages() {
    var core = new EngineCore(scheduler(64, 3), runner, kv);
    core.add(GenerationRequest.of("a", SchedulerFixture.prompt("a", 10), SamplingParams.greedy(), 21));
    Map<String, RequestOutput> finished = new HashMap<>();
    assertThat(run(core, "a", finished)).isEqualTo(expected(10, 21));
    assertThat(finished.get("a").status()).isEqualTo(RequestStatus.FINISHED_LENGTH);
    // prefill, then 4 tokens a step: 1 + 20 = 1 + 4 · 5
    assertThat(runner.plans).hasSize(6);
    SpecDecodeStats s = core.stats().speculation();
    assertThat(s.numDrafts()).isEqualTo(5);
    assertThat(s.numAcceptedTokens()).isEqualTo(15);
    assertThat(s.acceptedPerPosition()).containsExactly(5, 5, 5);
    assertThat(kv.usage().usedPages()).isZero();
  }

  @Test
  void aWrongDraftCutsTheRunAndRollsTheProgressBack() {
    runner.wrongAt = 1;
    var core = new EngineCore(scheduler(64, 3), runner, kv);
    core.add(GenerationRequest.of("a", SchedulerFixture.prompt("a", 10), SamplingParams.greedy(), 13));
    Map<String, RequestOutput> finished = new HashMap<>();
    assertThat(run(core, "a", finished)).isEqualTo(expected(10, 13));
    ScheduledChunk verify = chunkOf(runner.plans.get(1), "a");
    assertThat(verify.numTokens()).isEqualTo(4);
    assertThat(verify.startPosition()).isEqualTo(10);
    ScheduledChunk after = chunkOf(runner.plans.get(2), "a");
    assertThat(after.startPosition()).as("fed token + 1 accepted draft kept; the 2 rejected rows are recomputed").isEqualTo(12);
    assertThat(after.blockTable()).as("pages for the step's 4 tokens and 2 lookahead positions, no more").hasSize((12 + 4 + 2 + 3) / 4);
    SpecDecodeStats s = core.stats().speculation();
    assertThat(s.acceptedPerPosition()[0]).isEqualTo(s.numDrafts());
    assertThat(s.acceptedPerPosition()[1]).isZero();
    Usage usage = finished.get("a").usage();
    assertThat(usage.draftTokens()).as("the request's own counts, in its usage").isEqualTo(s.numDraftTokens()).isPositive();
    assertThat(usage.acceptedDraftTokens()).isEqualTo(s.numAcceptedTokens()).isEqualTo(s.numDrafts());
    assertThat(kv.usage().usedPages()).isZero();
  }

  @Test
  void draftsFitTheBudgetAndMaxTokens() {
    var core = new EngineCore(scheduler(3, 4), runner, kv);
    core.add(GenerationRequest.of("a", SchedulerFixture.prompt("a", 3), SamplingParams.greedy(), 5));
    Map<String, RequestOutput> finished = new HashMap<>();
    assertThat(run(core, "a", finished)).isEqualTo(expected(3, 5));
    assertThat(chunkOf(runner.plans.get(1), "a").numDraftTokens()).as("a budget of 3: the fed token and 2 drafts").isEqualTo(2);
    assertThat(chunkOf(runner.plans.get(2), "a").numDraftTokens()).as("4 tokens out, 1 more allowed: no draft").isZero();
  }

  @Test
  void nothingFollowsAStopInsideTheAcceptedRun() {
    var core = new EngineCore(scheduler(64, 3), runner, kv);
    int stop = next(12); // the token at position 13: the third generated token, inside the first verification's run
    core.add(GenerationRequest.of("a", SchedulerFixture.prompt("a", 11),
        SamplingParams.greedy().toBuilder().stopTokenIds(java.util.Set.of(stop)).build(), 50));
    Map<String, RequestOutput> finished = new HashMap<>();
    assertThat(run(core, "a", finished)).isEqualTo(expected(11, 3)).endsWith(stop);
    assertThat(finished.get("a").status()).isEqualTo(RequestStatus.FINISHED_STOPPED);
    assertThat(finished.get("a").usage().completionTokens()).isEqualTo(3);
    assertThat(kv.usage().usedPages()).isZero();
  }
}
