package io.moemesh.engine;

import static io.moemesh.engine.SchedulerFixture.budget;
import static io.moemesh.engine.SchedulerFixture.chunkOf;
import static io.moemesh.engine.SchedulerFixture.request;
import static io.moemesh.engine.SchedulerFixture.scheduled;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.entry;
import static org.assertj.core.api.Assertions.tuple;

import io.moemesh.model.sampling.SamplingParams;
import java.util.Set;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The scheduler with a synthetic runner: no model, only who runs how many tokens. */
class SchedulerTest {

  @Nested
  class Budget {
    @Test
    void chunksThePromptThatExhaustsTheBudget() {
      var f = new SchedulerFixture(budget(1024), 1000, 16);
      f.add(request("a", 800, 4), request("b", 800, 4), request("c", 800, 4));
      var first = f.step();
      assertThat(scheduled(first)).containsExactly(entry("a", 800), entry("b", 224));
      assertThat(chunkOf(first, "a").samples()).isTrue();
      assertThat(chunkOf(first, "b").samples()).as("a chunk inside the prompt samples nothing").isFalse();
      assertThat(f.tokens).containsOnlyKeys("a");

      var second = f.step();
      assertThat(scheduled(second)).containsOnly(entry("a", 1), entry("b", 576), entry("c", 447));
      assertThat(chunkOf(second, "b").startPosition()).isEqualTo(224);
      assertThat(chunkOf(second, "b").samples()).isTrue();
      assertThat(chunkOf(second, "a").startPosition()).isEqualTo(800);
    }

    @Test
    void decodesComeBeforeNewPrompts() {
      var f = new SchedulerFixture(budget(8), 100, 4);
      f.add(request("a", 5, 10));
      f.step();
      f.add(request("b", 20, 10));
      var plan = f.step();
      assertThat(scheduled(plan)).containsOnly(entry("a", 1), entry("b", 7));
      assertThat(plan.chunks().getFirst().requestId()).isEqualTo("a");
    }

    @Test
    void capsTheRunningRequests() {
      var f = new SchedulerFixture(budget(1000).withMaxRunningRequests(2), 100, 4);
      f.add(request("a", 5, 3), request("b", 5, 3), request("c", 5, 3));
      assertThat(scheduled(f.step())).containsOnlyKeys("a", "b");
      f.step();
      f.step(); // a and b finish: 3 tokens each
      assertThat(scheduled(f.step())).containsOnlyKeys("c");
    }

    @Test
    void everyRequestGetsAllItsTokensAndFinishesWithItsUsage() {
      var f = new SchedulerFixture(budget(64).withMaxRunningRequests(3), 200, 8);
      for (int i = 0; i < 7; i++) f.add(request("r" + i, 10 + 13 * i, 5 + i));
      f.runToCompletion();
      for (int i = 0; i < 7; i++) {
        RequestOutput out = f.finished.get("r" + i);
        assertThat(out.status()).isEqualTo(RequestStatus.FINISHED_LENGTH);
        assertThat(out.usage()).isEqualTo(new Usage(10 + 13 * i, 5 + i, 0));
        assertThat(f.tokens.get("r" + i)).hasSize(5 + i).first().isEqualTo(100 + (10 + 13 * i - 1) % 50);
      }
      assertThat(f.kv.usage().usedPages()).isZero();
    }
  }

  @Nested
  class LengthBuckets {
    @Test
    void preferPromptsOfTheFirstAdmittedLength() {
      var f = new SchedulerFixture(budget(260), 1000, 16);
      f.add(request("short", 100, 2), request("long", 1000, 2), request("short2", 120, 2));
      assertThat(scheduled(f.step())).containsOnly(entry("short", 100), entry("short2", 120), entry("long", 40));
    }

    @Test
    void neverStarveTheOldestWaitingPrompt() {
      var f = new SchedulerFixture(budget(230).withMaxRunningRequests(2), 1000, 16);
      f.add(request("short", 100, 1), request("long", 1000, 1), request("short2", 120, 1), request("short3", 110, 1));
      assertThat(scheduled(f.step())).containsOnlyKeys("short", "short2");
      assertThat(scheduled(f.step())).as("the oldest waiting prompt heads the next step").containsOnlyKeys("long");
    }

    @Test
    void offMeansFirstComeFirstServed() {
      var f = new SchedulerFixture(budget(260).withLengthBuckets(false), 1000, 16);
      f.add(request("short", 100, 2), request("long", 1000, 2), request("short2", 120, 2));
      assertThat(scheduled(f.step())).containsOnly(entry("short", 100), entry("long", 160));
    }
  }

  @Nested
  class Priorities {
    @Test
    void smallerPriorityRunsFirstUnderThePriorityPolicy() {
      var f = new SchedulerFixture(budget(10).withPolicy(SchedulerConfig.Policy.PRIORITY), 100, 4);
      f.add(new GenerationRequest("low", SchedulerFixture.prompt("low", 10), SamplingParams.greedy(), 1, 5),
          new GenerationRequest("high", SchedulerFixture.prompt("high", 10), SamplingParams.greedy(), 1, -1));
      assertThat(scheduled(f.step())).containsOnlyKeys("high");
    }

    @Test
    void fcfsIgnoresPriorities() {
      var f = new SchedulerFixture(budget(10), 100, 4);
      f.add(new GenerationRequest("low", SchedulerFixture.prompt("low", 10), SamplingParams.greedy(), 1, 5),
          new GenerationRequest("high", SchedulerFixture.prompt("high", 10), SamplingParams.greedy(), 1, -1));
      assertThat(scheduled(f.step())).containsOnlyKeys("low");
    }
  }

  @Nested
  class Preemption {
    /** 5 pages of 4 tokens; two prompts of 8 fill 4 pages, and the first decode step needs two more. */
    @Test
    void theLastRequestIsPreemptedAndRecomputedWithItsOutput() {
      var f = new SchedulerFixture(budget(64), 5, 4);
      f.add(request("a", 8, 10), request("b", 8, 3));
      f.step();
      var second = f.step();
      assertThat(second.preempted()).containsExactly("b");
      assertThat(scheduled(second)).containsOnlyKeys("a");
      assertThat(f.scheduler.status("b")).contains(RequestStatus.PREEMPTED);

      f.runToCompletion();
      var resumed = f.runner.plans.stream().filter(p -> p.chunks().stream().anyMatch(c -> c.requestId().equals("b")))
          .skip(1).findFirst().orElseThrow();
      ScheduledChunk recompute = chunkOf(resumed, "b");
      assertThat(recompute.startPosition()).isZero();
      assertThat(recompute.numTokens()).as("prompt and the token generated before preemption").isEqualTo(9);
      assertThat(recompute.numPromptTokens()).as("generated tokens keep their decode form").isEqualTo(8);
      assertThat(f.tokens.get("b")).containsExactly(107, 108, 109);
      assertThat(f.finished.get("a").status()).isEqualTo(RequestStatus.FINISHED_LENGTH);
      assertThat(f.kv.usage().usedPages()).isZero();
    }

    @Test
    void aLoneRequestThatOutgrowsTheCacheStopsAtItsCapacity() {
      var f = new SchedulerFixture(budget(64), 3, 4); // 12 tokens in all
      f.add(request("a", 8, 100));
      f.runToCompletion();
      assertThat(f.finished.get("a").status()).isEqualTo(RequestStatus.FINISHED_LENGTH);
      assertThat(f.tokens.get("a")).hasSize(4);
    }
  }

  @Nested
  class Abort {
    @Test
    void inEveryStateFreesEveryPage() {
      var f = new SchedulerFixture(budget(20).withMaxRunningRequests(2), 40, 4);
      f.add(request("decoding", 6, 50), request("prefilling", 40, 50), request("waiting", 60, 50));
      f.step();
      f.step();
      assertThat(f.scheduler.status("waiting")).contains(RequestStatus.WAITING);
      assertThat(f.core.abort("waiting").orElseThrow().status()).isEqualTo(RequestStatus.FINISHED_ABORTED);
      assertThat(f.core.abort("prefilling").orElseThrow().usage().completionTokens()).isZero();
      assertThat(f.core.abort("decoding").orElseThrow().usage().completionTokens()).isEqualTo(2);
      assertThat(f.kv.usage().usedPages()).isZero();
      assertThat(f.core.hasRequests()).isFalse();
      assertThat(f.core.abort("decoding")).as("already finished").isEmpty();
    }

    @Test
    void ofAPreemptedRequestLeavesNothingBehind() {
      var f = new SchedulerFixture(budget(64), 5, 4);
      f.add(request("a", 8, 3), request("b", 8, 3));
      f.step();
      f.step();
      assertThat(f.scheduler.status("b")).contains(RequestStatus.PREEMPTED);
      assertThat(f.core.abort("b").orElseThrow().status()).isEqualTo(RequestStatus.FINISHED_ABORTED);
      f.runToCompletion();
      assertThat(f.finished.get("a").status()).isEqualTo(RequestStatus.FINISHED_LENGTH);
      assertThat(f.kv.usage().usedPages()).isZero();
    }

    @Test
    void betweenScheduleAndUpdateDropsTheStepsResultForIt() {
      var f = new SchedulerFixture(budget(64), 50, 4);
      f.add(request("a", 8, 3), request("b", 8, 3));
      SchedulerOutput plan = f.scheduler.schedule();
      RunnerOutput out = f.runner.execute(plan);
      f.scheduler.abort("a");
      assertThat(f.scheduler.update(plan, out)).extracting(RequestOutput::requestId).containsExactly("b");
    }
  }

  @Nested
  class PrefixCache {
    @Test
    void aLaterPromptAdoptsTheCachedPagesOfItsPrefix() {
      var f = new SchedulerFixture(budget(64), 50, 4);
      int[] first = SchedulerFixture.prompt("x", 10);
      f.add(GenerationRequest.of("a", first, SamplingParams.greedy(), 2));
      f.runToCompletion();
      int[] second = java.util.Arrays.copyOf(first, 13);
      second[9] = 999;
      second[10] = 998;
      second[11] = 997;
      second[12] = 996;
      f.add(GenerationRequest.of("b", second, SamplingParams.greedy(), 2));
      var plan = f.step();
      assertThat(chunkOf(plan, "b").startPosition()).as("two full pages (8 tokens) cached").isEqualTo(8);
      assertThat(chunkOf(plan, "b").numTokens()).isEqualTo(5);
      f.runToCompletion();
      assertThat(f.finished.get("b").usage().cachedPromptTokens()).isEqualTo(8);
      assertThat(f.kv.usage().hitTokens()).isEqualTo(8);
    }

    @Test
    void anIdenticalPromptStillComputesItsLastToken() {
      var f = new SchedulerFixture(budget(64), 50, 4);
      f.add(request("a", 8, 1));
      f.runToCompletion();
      f.add(GenerationRequest.of("b", SchedulerFixture.prompt("a", 8), SamplingParams.greedy(), 1));
      assertThat(chunkOf(f.step(), "b").startPosition()).as("1 page of 4: the 8th token needs logits").isEqualTo(4);
    }

    @Test
    void generatedTokensAreNeverReused() {
      var f = new SchedulerFixture(budget(64), 50, 4);
      f.add(request("a", 4, 8));
      f.runToCompletion();
      int[] all = new int[12];
      System.arraycopy(SchedulerFixture.prompt("a", 4), 0, all, 0, 4);
      for (int i = 0; i < 8; i++) all[4 + i] = f.tokens.get("a").get(i);
      f.add(GenerationRequest.of("b", all, SamplingParams.greedy(), 1));
      assertThat(chunkOf(f.step(), "b").startPosition())
          .as("a's decode-form KV would not match b's prompt form bit for bit").isEqualTo(4);
    }

    @Test
    void anExportedPromptHandsOverItsCachedPrefixWithItsFirstChunk() {
      var f = new SchedulerFixture(budget(6), 50, 4);
      f.add(request("a", 10, 1));
      f.runToCompletion();
      f.add(export("b", SchedulerFixture.prompt("a", 20), 0));
      var first = chunkOf(f.step(), "b");
      assertThat(first.startPosition()).as("two full pages cached").isEqualTo(8);
      assertThat(first.exportFrom()).as("the cached rows go with the first chunk").isZero();
      var second = chunkOf(f.step(), "b");
      assertThat(second.startPosition()).isEqualTo(14);
      assertThat(second.exportFrom()).isEqualTo(14);
    }

    @Test
    void aStoredPrefixLongerThanTheCachedOneIsLoadedThenTheRestComputed() {
      var f = new SchedulerFixture(budget(64), 50, 4);
      f.add(request("a", 5, 1)); // caches one page of b's prompt
      f.runToCompletion();
      f.add(export("b", SchedulerFixture.prompt("a", 14), 8), export("c", SchedulerFixture.prompt("a", 14), 4));
      var plan = f.scheduler.schedule();
      assertThat(plan.loads()).extracting(SchedulerOutput.KvLoad::requestId, SchedulerOutput.KvLoad::numTokens).containsExactly(tuple("b", 8));
      assertThat(chunkOf(plan, "c").startPosition()).as("c's stored prefix is no longer than its cached one").isEqualTo(4);
      assertThat(f.scheduler.status("b")).hasValue(RequestStatus.WAITING_FOR_REMOTE_KV);
      f.scheduler.kvLoaded("b", KvLoadResult.LOADED);
      var loaded = chunkOf(f.scheduler.schedule(), "b");
      assertThat(loaded.startPosition()).isEqualTo(8);
      assertThat(loaded.exportFrom()).isZero();
    }

    @Test
    void aStoredPrefixThatCannotBeLoadedIsComputed() {
      var f = new SchedulerFixture(budget(64), 50, 4);
      f.add(export("b", SchedulerFixture.prompt("b", 14), 8));
      assertThat(f.scheduler.schedule().loads()).hasSize(1);
      assertThat(f.scheduler.kvLoaded("b", KvLoadResult.failed(KvLoadResult.Reason.STORE_UNAVAILABLE, "the store is gone"))).isEmpty();
      var computed = chunkOf(f.scheduler.schedule(), "b");
      assertThat(computed.startPosition()).isZero();
      assertThat(computed.numTokens()).isEqualTo(14);
      assertThat(f.kv.usage().usedPages()).isEqualTo(4);
    }

    @Test
    void offComputesEverything() {
      var f = new SchedulerFixture(budget(64), 50, 4, false, SchedulerFixture.LIMITS, new SyntheticRunner());
      f.add(request("a", 8, 1));
      f.runToCompletion();
      f.add(GenerationRequest.of("b", SchedulerFixture.prompt("a", 9), SamplingParams.greedy(), 1));
      assertThat(chunkOf(f.step(), "b").startPosition()).isZero();
    }
  }

  @Nested
  class Stops {
    SchedulerFixture fixture(int eosAtPosition) {
      var runner = new SyntheticRunner((id, position) -> position == eosAtPosition ? 1 : 100 + position % 50);
      return new SchedulerFixture(budget(64), 50, 4, true, new ModelLimits(1000, 16, new int[] {1}), runner);
    }

    @Test
    void eosStopsUnlessIgnored() {
      var f = fixture(7);
      f.add(request("a", 5, 10));
      f.add(GenerationRequest.of("b", SchedulerFixture.prompt("b", 5), SamplingParams.greedy().toBuilder().ignoreEos(true).build(), 10));
      f.runToCompletion();
      assertThat(f.finished.get("a").status()).isEqualTo(RequestStatus.FINISHED_STOPPED);
      assertThat(f.tokens.get("a")).containsExactly(104, 105, 106, 1);
      assertThat(f.finished.get("b").status()).isEqualTo(RequestStatus.FINISHED_LENGTH);
      assertThat(f.tokens.get("b")).hasSize(10).contains(1);
    }

    @Test
    void aStopTokenIdStops() {
      var f = fixture(-1);
      f.add(GenerationRequest.of("a", SchedulerFixture.prompt("a", 5), SamplingParams.greedy().toBuilder().stopTokenIds(Set.of(106)).build(), 10));
      f.runToCompletion();
      assertThat(f.finished.get("a").status()).isEqualTo(RequestStatus.FINISHED_STOPPED);
      assertThat(f.tokens.get("a")).containsExactly(104, 105, 106);
    }

    @Test
    void theContextLengthStops() {
      var f = fixture(-1); // context 16
      f.add(request("a", 12, 100));
      f.runToCompletion();
      assertThat(f.finished.get("a").status()).isEqualTo(RequestStatus.FINISHED_LENGTH);
      assertThat(f.tokens.get("a")).hasSize(4);
    }

    @Test
    void requestsThatCanNeverRunAreRejectedBeforeScheduling() {
      var f = fixture(-1);
      assertThatThrownBy(() -> f.add(request("a", 17, 1))).hasMessage("request a: the prompt has 17 tokens but the context holds at most 16");
      assertThatThrownBy(() -> f.add(GenerationRequest.of("b", new int[] {5, 1000}, SamplingParams.greedy(), 1)))
          .hasMessage("request b: prompt token id 1000 is outside the vocabulary [0, 1000)");
      assertThatThrownBy(() -> f.add(GenerationRequest.of("c", new int[] {5}, SamplingParams.greedy().toBuilder().stopTokenIds(Set.of(5000)).build(), 1)))
          .hasMessageContaining("5000");
      f.add(request("d", 3, 1));
      assertThatThrownBy(() -> f.add(request("d", 3, 1))).hasMessage("request id d is already in use");
      assertThatThrownBy(() -> request("e", 3, 0)).hasMessage("request e: max_tokens must be at least 1, got 0");
      assertThat(f.scheduler.numWaiting()).isEqualTo(1);
    }
  }

  @Nested
  class Failures {
    @Test
    void aRequestTheRunnerFailsFinishesAloneWithItsMessage() {
      var f = new SchedulerFixture(budget(64), 50, 4);
      f.runner.failPolitely.add("bad");
      f.add(request("good", 5, 3), request("bad", 5, 3));
      f.runToCompletion();
      assertThat(f.finished.get("bad").status()).isEqualTo(RequestStatus.FINISHED_ERROR);
      assertThat(f.finished.get("bad").error()).isEqualTo("synthetic failure");
      assertThat(f.finished.get("good").status()).isEqualTo(RequestStatus.FINISHED_LENGTH);
      assertThat(f.tokens.get("good")).hasSize(3);
    }

    @Test
    void aBatchThatThrowsIsRerunRequestByRequestSoOnlyTheCulpritFails() {
      var f = new SchedulerFixture(budget(64), 50, 4);
      f.runner.throwFor.add("bad");
      f.add(request("good", 5, 3), request("bad", 5, 3), request("fine", 7, 2));
      f.runToCompletion();
      assertThat(f.finished.get("bad").status()).isEqualTo(RequestStatus.FINISHED_ERROR);
      assertThat(f.finished.get("bad").error()).isEqualTo("the model failed on this request: boom in bad");
      assertThat(f.tokens.get("good")).containsExactly(104, 105, 106);
      assertThat(f.tokens.get("fine")).containsExactly(106, 107);
      assertThat(f.kv.usage().usedPages()).isZero();
    }
  }

  private static GenerationRequest export(String id, int[] prompt, int storedPrefix) {
    return new GenerationRequest(id, prompt, SamplingParams.greedy(), 1, 0, new KvHandoff.Export(storedPrefix));
  }
}
