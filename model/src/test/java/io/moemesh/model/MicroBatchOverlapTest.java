package io.moemesh.model;

import static io.moemesh.model.DeepseekModelTest.PAGE;
import static io.moemesh.model.DeepseekModelTest.TINY_VOCAB;
import static io.moemesh.model.ModelRuns.randomTokens;
import static io.moemesh.model.ModelRuns.rows;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.NativeKernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.demo.DemoCheckpoint.Format;
import io.moemesh.model.moe.ExpertBackend;
import io.moemesh.model.moe.Routing;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Dual micro-batch overlap ({@link DeepseekModel#forward(ForwardBatch, LatentKvCache, ExpertBackend,
 * DeepseekModel.LayerObserver, TensorArena, DeepseekModel.MicroBatches)}) on the tiny model (one dense layer, then
 * MoE layers 1 and 2): the same bits as one batch, in the interleaved order, with each micro-batch's temporaries in
 * a workspace of its own that releases them layer by layer.
 */
class MicroBatchOverlapTest {
  @TempDir static Path dir;
  static NativeKernels kernels;
  static Path tiny;
  static final Map<Precision, DeepseekModel> models = new EnumMap<>(Precision.class);

  @BeforeAll
  static void writeCheckpoint() {
    kernels = NativeKernels.create(2);
    tiny = TestCheckpoints.demo(dir, "tiny", Format.BF16, DeepseekModelTest.SEED);
  }

  @AfterAll
  static void close() {
    models.values().forEach(DeepseekModel::close);
    kernels.close();
  }

  static DeepseekModel model(Precision precision) {
    return models.computeIfAbsent(precision, p -> DeepseekModel.load(tiny, p, kernels, null));
  }

  @Nested
  class Split {
    /** Chunks of 1 (decode), 9 (prompt), 1 (decode) and 20 (prompt) rows: 31 rows, boundaries at 1, 10 and 11. */
    final ForwardBatch batch = mixedBatch();

    @Test
    void splitsAtTheChunkBoundaryNearestHalfTheRows() {
      assertThat(batch.microBatchSplit()).isEqualTo(11); // |2·11 − 31| = 9 beats |2·10 − 31| = 11
      assertThat(ForwardBatch.single(new int[] {5, 6, 7, 8}, 0, 4, new int[] {0}, true).microBatchSplit()).as("one chunk").isZero();
    }

    @Test
    void aTieGoesToTheLowerBoundary() {
      var four = new ForwardBatch(new int[] {5, 6, 7, 8}, new int[] {3, 4, 9, 2}, List.of(
          new ForwardBatch.SequenceChunk(0, 1, 3, new int[] {0}), new ForwardBatch.SequenceChunk(1, 1, 4, new int[] {1}),
          new ForwardBatch.SequenceChunk(2, 1, 9, new int[] {2}), new ForwardBatch.SequenceChunk(3, 1, 2, new int[] {3})),
          new int[] {0, 1, 2, 3});
      assertThat(four.microBatchSplit()).isEqualTo(2);
      var three = four.slice(0, 3);
      assertThat(three.microBatchSplit()).as("1 and 2 are equally far from 1.5").isEqualTo(1);
    }

    @Test
    void aSliceRenumbersWholeChunksAndKeepsTheirLogitRows() {
      ForwardBatch second = batch.slice(11, 31);
      assertThat(second.tokens()).isEqualTo(Arrays.copyOfRange(batch.tokens(), 11, 31));
      assertThat(second.positions()).isEqualTo(Arrays.copyOfRange(batch.positions(), 11, 31));
      assertThat(second.sequences()).hasSize(1);
      assertThat(second.sequences().getFirst().firstRow()).isZero();
      assertThat(second.sequences().getFirst().blockTable()).isEqualTo(batch.sequences().get(3).blockTable());
      assertThat(second.logitRows()).isEqualTo(IntStream.range(0, 20).toArray());
      assertThat(batch.slice(0, 11).logitRows()).isEqualTo(IntStream.range(0, 11).toArray());
    }

    @Test
    void aSliceNeverCutsAChunk() {
      assertThatThrownBy(() -> batch.slice(0, 5)).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("cut the sequence chunk of rows [1, 10)");
    }
  }

  @Nested
  class Identity {
    @ParameterizedTest
    @EnumSource(Precision.class)
    void aMixedPrefillAndDecodeBatchGivesTheBitsOfOneBatch(Precision precision) {
      DeepseekModel model = model(precision);
      ForwardBatch batch = mixedBatch();
      try (TensorArena arena = TensorArena.open(); TensorArena scratch = TensorArena.workspace(); TensorArena second = TensorArena.workspace()) {
        LatentKvCache one = historyCache(model, arena), two = historyCache(model, arena);
        List<Integer> layersSeen = new ArrayList<>();
        var whole = model.forward(batch, one, model.localExperts(), DeepseekModel.LayerObserver.NONE, scratch);
        float[][] expectedLogits = rows(whole.logits()), expectedHidden = rows(whole.hidden());
        scratch.reset();
        var micro = new DeepseekModel.MicroBatches(batch.microBatchSplit(), second);
        var split = model.forward(batch, two, model.localExperts(), layersSeen::add, scratch, micro);
        assertThat(rows(split.logits())).isDeepEqualTo(expectedLogits);
        assertThat(rows(split.hidden())).isDeepEqualTo(expectedHidden);
        assertThat(layersSeen).as("each layer told once, in order").containsExactly(0, 1, 2);
        for (int layer = 0; layer < model.config().numHiddenLayers(); layer++)
          for (ForwardBatch.SequenceChunk s : batch.sequences()) {
            int start = batch.positions()[s.firstRow()];
            assertThat(two.readRows(layer, s.blockTable(), start, s.numRows())).as("KV of layer %d, rows from %d", layer, s.firstRow())
                .isEqualTo(one.readRows(layer, s.blockTable(), start, s.numRows()));
          }
      }
    }
  }

  @Nested
  class Schedule {
    @Test
    void eachMicroBatchsExpertsWorkWhileTheOtherComputesAttention() {
      DeepseekModel model = model(Precision.INT8);
      var experts = new RecordingExperts(model.localExperts(), -1);
      ForwardBatch batch = mixedBatch(); // micro-batches of 11 and 20 rows
      try (TensorArena arena = TensorArena.open(); TensorArena scratch = TensorArena.workspace(); TensorArena second = TensorArena.workspace()) {
        model.forward(batch, historyCache(model, arena), experts, DeepseekModel.LayerObserver.NONE, scratch,
            new DeepseekModel.MicroBatches(11, second));
      }
      assertThat(experts.events).containsExactly(
          "start 1 (11)", "start 1 (20)", "finish 1 (11)", "start 2 (11)", "finish 1 (20)", "start 2 (20)", "finish 2 (11)", "finish 2 (20)");
    }

    @Test
    void oneBatchStartsAndFinishesEachLayerInTurn() {
      DeepseekModel model = model(Precision.INT8);
      var experts = new RecordingExperts(model.localExperts(), -1);
      try (TensorArena arena = TensorArena.open()) {
        model.forward(mixedBatch(), historyCache(model, arena), experts, arena);
      }
      assertThat(experts.events).containsExactly("start 1 (31)", "finish 1 (31)", "start 2 (31)", "finish 2 (31)");
    }

    @Test
    void whenOneMicroBatchFailsTheOthersExpertsAreStillFinished() {
      DeepseekModel model = model(Precision.INT8);
      var experts = new RecordingExperts(model.localExperts(), 2); // the third event, "finish 1 (11)", throws
      try (TensorArena arena = TensorArena.open(); TensorArena scratch = TensorArena.workspace(); TensorArena second = TensorArena.workspace()) {
        LatentKvCache cache = historyCache(model, arena);
        assertThatThrownBy(() -> model.forward(mixedBatch(), cache, experts, DeepseekModel.LayerObserver.NONE, scratch,
            new DeepseekModel.MicroBatches(11, second))).hasMessage("experts failed at finish 1 (11)");
      }
      assertThat(experts.events).containsExactly("start 1 (11)", "start 1 (20)", "finish 1 (11)", "finish 1 (20)");
    }
  }

  /** The in-process experts, logging each start and finish with its layer and rows; optionally failing at one event. */
  static final class RecordingExperts implements ExpertBackend {
    final ExpertBackend inner;
    final int failAt;
    final List<String> events = new ArrayList<>();

    RecordingExperts(ExpertBackend inner, int failAt) {
      this.inner = inner;
      this.failAt = failAt;
    }

    @Override
    public void routed(Kernels k, int layerId, Tensor out, Tensor x, Routing routing, TensorArena scratch) {
      inner.routed(k, layerId, out, x, routing, scratch);
    }

    @Override
    public void shared(Kernels k, int layerId, Tensor out, Tensor x, TensorArena scratch) {
      inner.shared(k, layerId, out, x, scratch);
    }

    @Override
    public Pending start(Kernels k, int layerId, Tensor routedOut, Tensor sharedOut, Tensor x, Routing routing, TensorArena scratch) {
      String rows = layerId + " (" + x.numRows() + ")";
      log("start " + rows);
      Pending pending = inner.start(k, layerId, routedOut, sharedOut, x, routing, scratch);
      return () -> {
        log("finish " + rows);
        pending.finish();
      };
    }

    private void log(String event) {
      events.add(event);
      if (events.size() - 1 == failAt) throw new IllegalStateException("experts failed at " + event);
    }
  }

  /** Decode row of a (17 tokens cached), prompt b (9), decode row of c (39 cached), prompt d (20); logits for every row. */
  static ForwardBatch mixedBatch() {
    int[] b = randomTokens(TINY_VOCAB, 9, 16), d = randomTokens(TINY_VOCAB, 20, 18);
    int[] tokens = IntStream.concat(IntStream.concat(IntStream.of(A[17]), Arrays.stream(b)), IntStream.concat(IntStream.of(C[39]), Arrays.stream(d)))
        .toArray();
    int[] positions = IntStream.concat(IntStream.concat(IntStream.of(17), IntStream.range(0, 9)), IntStream.concat(IntStream.of(39), IntStream.range(0, 20)))
        .toArray();
    return new ForwardBatch(tokens, positions, List.of(
        new ForwardBatch.SequenceChunk(0, 1, 17, PAGES_A),
        new ForwardBatch.SequenceChunk(1, 9, 9, new int[] {4}),
        new ForwardBatch.SequenceChunk(10, 1, 39, PAGES_C),
        new ForwardBatch.SequenceChunk(11, 20, 20, new int[] {11, 12})),
        IntStream.range(0, 31).toArray());
  }

  static final int[] A = randomTokens(TINY_VOCAB, 18, 15), C = randomTokens(TINY_VOCAB, 40, 17);
  static final int[] PAGES_A = {2, 6}, PAGES_C = {8, 9, 10};

  /** A cache holding the first 17 tokens of A and the first 39 of C: the history of the batch's decode rows. */
  static LatentKvCache historyCache(DeepseekModel model, TensorArena arena) {
    LatentKvCache cache = model.newCache(arena, 16, PAGE);
    try (TensorArena scratch = TensorArena.confined()) {
      model.forward(ForwardBatch.single(Arrays.copyOf(A, 17), 0, 17, PAGES_A, false), cache, scratch);
      model.forward(ForwardBatch.single(Arrays.copyOf(C, 39), 0, 39, PAGES_C, false), cache, scratch);
    }
    return cache;
  }
}
