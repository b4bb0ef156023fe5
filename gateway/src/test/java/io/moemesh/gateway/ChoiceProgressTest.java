package io.moemesh.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.common.v1.SampledToken;
import io.moemesh.proto.common.v1.SamplingParams;
import io.moemesh.proto.common.v1.Usage;
import io.moemesh.proto.drain.DrainMarker;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The gateway's bookkeeping of a choice that moves to another decode replica mid-stream. */
class ChoiceProgressTest {
  static final int[] PROMPT = {0, 17, 42, 99};
  static final Throwable LOST = Status.UNAVAILABLE.withDescription("connection reset").asRuntimeException();

  static BackendCall call(int maxTokens, SamplingParams sampling) {
    return new BackendCall("client-id", "cmpl-1", null, PROMPT, sampling, maxTokens, BackendCall.Migrations.NONE);
  }

  static BackendChunk running(int... ids) {
    return new BackendChunk(tokens(ids), FinishReason.FINISH_REASON_UNSPECIFIED, null);
  }

  static List<SampledToken> tokens(int... ids) {
    return IntStream.of(ids).mapToObj(id -> SampledToken.newBuilder().setTokenId(id).build()).toList();
  }

  @Nested
  class TokenAccounting {
    @Test
    void continuationPromptIsThePromptThenTheDeliveredTokensWithTheBudgetLeft() {
      var progress = new ChoiceProgress(call(10, SamplingParams.getDefaultInstance()), 2);
      progress.delivered(running(5)); // the prefill's first token
      progress.delivered(running(6, 7));
      BackendCall next = progress.migrate();
      assertThat(next.promptIds()).containsExactly(0, 17, 42, 99, 5, 6, 7);
      assertThat(next.maxTokens()).isEqualTo(7);
      assertThat(next.rpcId()).isEqualTo("cmpl-1-m1");
      assertThat(next.correlationId()).isEqualTo("client-id");
      assertThat(PROMPT).containsExactly(0, 17, 42, 99); // the original prompt is left alone

      progress.delivered(running(8)); // the continuation's first token
      BackendCall again = progress.migrate();
      assertThat(again.promptIds()).containsExactly(0, 17, 42, 99, 5, 6, 7, 8);
      assertThat(again.maxTokens()).isEqualTo(6);
      assertThat(again.rpcId()).isEqualTo("cmpl-1-m2");
      assertThat(progress.numDelivered() + progress.remaining()).isEqualTo(10); // max_tokens counts what was produced
    }

    @Test
    void manyTokensGrowTheRecord() {
      var progress = new ChoiceProgress(call(1000, SamplingParams.getDefaultInstance()), 1);
      int[] ids = IntStream.range(100, 400).toArray();
      for (int id : ids) progress.delivered(running(id));
      BackendCall next = progress.migrate();
      assertThat(Arrays.copyOfRange(next.promptIds(), PROMPT.length, next.promptIds().length)).containsExactly(ids);
      assertThat(next.maxTokens()).isEqualTo(700);
    }

    @Test
    void aContinuationsUsageIsDroppedSoCachedPromptTokensStayTheFirstLegs() {
      var progress = new ChoiceProgress(call(10, SamplingParams.getDefaultInstance()), 2);
      Usage firstLeg = Usage.newBuilder().setPromptTokens(4).setCachedPromptTokens(2).build();
      assertThat(progress.delivered(new BackendChunk(tokens(5), FinishReason.FINISH_REASON_UNSPECIFIED, firstLeg)).usage())
          .isEqualTo(firstLeg);
      progress.migrate();
      Usage continuation = Usage.newBuilder().setPromptTokens(5).setCachedPromptTokens(4).build();
      assertThat(progress.delivered(new BackendChunk(tokens(6), FinishReason.FINISH_REASON_STOP, continuation)).usage()).isNull();
    }

    @Test
    void aSeedIsDerivedFromTheCutAndAnUnseededRequestStaysUnseeded() {
      var seeded = new ChoiceProgress(call(10, SamplingParams.newBuilder().setTemperature(0.8).setSeed(7).build()), 2);
      seeded.delivered(running(5, 6));
      long derived = seeded.migrate().sampling().getSeed();
      assertThat(derived).isEqualTo(ChoiceProgress.continuationSeed(7, 2)).isNotEqualTo(7);
      assertThat(ChoiceProgress.continuationSeed(7, 3)).isNotEqualTo(derived);
      assertThat(ChoiceProgress.continuationSeed(8, 2)).isNotEqualTo(derived);

      var unseeded = new ChoiceProgress(call(10, SamplingParams.newBuilder().setTemperature(0.8).build()), 2);
      unseeded.delivered(running(5));
      assertThat(unseeded.migrate().sampling().hasSeed()).isFalse();
    }
  }

  @Nested
  class WhenToMigrate {
    @Test
    void aLostDrainedOrUnfinishedStreamMigratesOnceTokensWentOut() {
      var progress = new ChoiceProgress(call(10, SamplingParams.getDefaultInstance()), 2);
      assertThat(progress.migratable(LOST)).isEmpty(); // nothing delivered: the legs' own retries handle it
      progress.delivered(running(5));
      assertThat(progress.migratable(LOST)).contains(MigrationReason.UNAVAILABLE);
      assertThat(progress.migratable(DrainMarker.unavailable("drained"))).contains(MigrationReason.DRAIN);
      assertThat(progress.migratable(new BackendException.Unfinished())).contains(MigrationReason.INCOMPLETE);
    }

    @Test
    void theRequestsOwnFailuresDoNot() {
      var progress = new ChoiceProgress(call(10, SamplingParams.getDefaultInstance()), 2);
      progress.delivered(running(5));
      assertThat(progress.migratable(Status.DEADLINE_EXCEEDED.asRuntimeException())).isEmpty();
      assertThat(progress.migratable(Status.INVALID_ARGUMENT.asRuntimeException())).isEmpty();
      assertThat(progress.migratable(new BackendException("decode failed: boom"))).isEmpty();
      assertThat(progress.migratable(ApiError.unavailable("No decode replica is reachable", java.time.Duration.ofSeconds(1)))).isEmpty();
    }

    @Test
    void migrationsAreBounded() {
      var progress = new ChoiceProgress(call(10, SamplingParams.getDefaultInstance()), 2);
      progress.delivered(running(5));
      progress.migrate();
      progress.delivered(running(6));
      progress.migrate();
      progress.delivered(running(7));
      assertThat(progress.migrations()).isEqualTo(2);
      assertThat(progress.migratable(LOST)).isEmpty();
    }

    @Test
    void aFinishedChoiceNeverMigratesAndASpentBudgetHasNothingToContinue() {
      var progress = new ChoiceProgress(call(2, SamplingParams.getDefaultInstance()), 2);
      progress.delivered(running(5, 6)); // the budget's last token, its finish lost with the replica
      assertThat(progress.remaining()).isZero();
      assertThat(progress.migratable(LOST)).contains(MigrationReason.UNAVAILABLE);
      assertThatThrownBy(progress::migrate).isInstanceOf(IllegalStateException.class);
      progress.delivered(new BackendChunk(List.of(), FinishReason.FINISH_REASON_LENGTH, null));
      assertThat(progress.migratable(LOST)).isEmpty();
    }
  }

  /**
   * The choice's decoder (detokenizer, stop strings) lives across the cut: a stop string half before and half after
   * it is found, whatever token the replica was lost after.
   */
  @Nested
  class StopStringsAcrossTheCut {
    @Test
    void aStopStringSpanningTheCutEndsTheChoiceAtEveryCut() {
      var model = new ServedModel(TestModel.write(), Optional.empty());
      int[] ids = model.tokenizer().encode("once upon a STOP time", false);
      assertThat(ids.length).isGreaterThan(3);
      for (int cut = 1; cut < ids.length; cut++) {
        var progress = new ChoiceProgress(call(64, SamplingParams.getDefaultInstance()), 2);
        var decoder = new ChoiceDecoder(0, model.tokenizer(), List.of("STOP"), false);
        List<ChoiceEvent> events = new ArrayList<>();
        for (int i = 0; i < cut; i++) events.add(decoder.accept(progress.delivered(running(ids[i]))));
        assertThat(progress.migratable(LOST)).isPresent();
        BackendCall next = progress.migrate();
        assertThat(next.promptIds()).endsWith(Arrays.copyOf(ids, cut));
        for (int i = cut; i < ids.length && events.stream().noneMatch(ChoiceEvent::finished); i++)
          events.add(decoder.accept(progress.delivered(running(ids[i]))));
        String text = events.stream().map(ChoiceEvent::text).reduce("", String::concat);
        assertThat(text).as("cut after %d tokens", cut).isEqualTo("once upon a ");
        assertThat(events.getLast().finishReason()).isEqualTo("stop");
      }
    }
  }
}
