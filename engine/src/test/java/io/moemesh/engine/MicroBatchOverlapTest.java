package io.moemesh.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.engine.RecordingExperts.Pass;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.ForwardBatch;
import io.moemesh.model.Precision;
import io.moemesh.model.sampling.SamplingParams;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Steps of at least {@code microBatchThreshold} tokens run as two overlapped micro-batches of whole requests, with
 * the experts in this process: the same tokens and bit-identical logits as one batch. (The remote path:
 * {@link RemoteExpertsTest}.) The tiny model's first MoE layer is layer 1.
 */
class MicroBatchOverlapTest {
  static final int FIRST_MOE_LAYER = 1;
  static final KvCacheConfig KV = new KvCacheConfig(64, 8, true);

  @Nested
  class Threshold {
    @Test
    void aStepSplitsFromTheThresholdOnAndOnlyBetweenRequests() {
      ForwardBatch four = ForwardBatch.single(new int[] {5, 6, 7, 8}, 0, 4, new int[] {0}, true);
      ForwardBatch threeRequests = DeepseekRunner.batchOf(List.of(chunk("a", 2), chunk("b", 1), chunk("c", 1)));
      assertThat(DeepseekRunner.microBatchSplit(threeRequests, 4)).as("at the threshold").isEqualTo(2);
      assertThat(DeepseekRunner.microBatchSplit(threeRequests, 5)).as("just below it").isZero();
      assertThat(DeepseekRunner.microBatchSplit(threeRequests, 0)).as("off").isZero();
      assertThat(DeepseekRunner.microBatchSplit(four, 1)).as("one request is never split").isZero();
    }

    /**
     * Prompts of 4–7 tokens, then 4, 4, 3, 3, 2, 2, 1, 1 decode rows as the requests finish: with the threshold at
     * 3, the prefill step and the steps of 4 and 3 rows overlap, those of 2 and 1 do not.
     */
    @ParameterizedTest
    @EnumSource(Precision.class)
    void stepsAtOrAboveTheThresholdOverlapAndGiveTheBitsOfOneBatch(Precision precision) throws Exception {
      DeepseekModel model = TinyModel.model(precision);
      List<GenerationRequest> requests = new ArrayList<>();
      for (int i = 0; i < 4; i++)
        requests.add(GenerationRequest.of("d" + i, EngineTest.randomPrompt(50 + i, 4 + i), SamplingParams.greedy().toBuilder().ignoreEos(true).build(),
            3 + 2 * i));
      var experts = new RecordingExperts(model.localExperts());
      var overlapped = EngineTest.run(model, experts, EngineTest.ROOMY, KV, requests, 3);
      assertThat(experts.passes(FIRST_MOE_LAYER)).containsExactly(new Pass(22, true), new Pass(4, true), new Pass(4, true),
          new Pass(3, true), new Pass(3, true), new Pass(2, false), new Pass(2, false), new Pass(1, false), new Pass(1, false));
      EngineTest.assertSameTokensAndLogits(overlapped, EngineTest.run(model, model.localExperts(), EngineTest.ROOMY, KV, requests, 0));
    }
  }

  @Nested
  class InProcessExperts {
    /** Chunked prefill of 19 tokens a step: most steps mix decode rows with prompt chunks. */
    @ParameterizedTest
    @EnumSource(Precision.class)
    void mixedPrefillAndDecodeStepsGiveTheBitsOfOneBatch(Precision precision) throws Exception {
      DeepseekModel model = TinyModel.model(precision);
      var requests = EngineTest.mixedRequests();
      var scheduler = SchedulerConfig.defaults().withMaxBatchedTokens(19);
      var experts = new RecordingExperts(model.localExperts());
      var overlapped = EngineTest.run(model, experts, scheduler, KV, requests, 2);
      var passes = experts.passes(FIRST_MOE_LAYER);
      assertThat(passes.stream().filter(Pass::overlapped).count()).as("overlapped steps").isGreaterThan(passes.size() / 2);
      assertThat(passes).filteredOn(p -> p.rows() < 2).allMatch(p -> !p.overlapped());
      EngineTest.assertSameTokensAndLogits(overlapped, EngineTest.run(model, model.localExperts(), scheduler, KV, requests, 0));
    }
  }

  static ScheduledChunk chunk(String id, int tokens) {
    return new ScheduledChunk(id, new int[tokens], 0, tokens, new int[] {0}, null, null, -1);
  }
}
