package io.moemesh.expert;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.moemesh.kernels.DType;
import io.moemesh.kernels.KernelBackend;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.ExpertWeights;
import io.moemesh.model.ModelConfig;
import io.moemesh.model.ModelConfigReader;
import io.moemesh.model.Precision;
import io.moemesh.model.moe.ExpertDispatch;
import io.moemesh.model.moe.ExpertSelection;
import io.moemesh.model.moe.Placement;
import io.moemesh.proto.expert.v1.CombineFrame;
import io.moemesh.proto.expert.v1.DispatchFrame;
import io.moemesh.proto.expert.v1.ExpertLoadRequest;
import io.moemesh.proto.expert.v1.ExpertRole;
import io.moemesh.proto.expert.v1.Experts;
import io.moemesh.proto.expert.v1.InfoRequest;
import io.moemesh.proto.expert.v1.LayerSlots;
import io.moemesh.proto.expert.v1.PlacementTable;
import io.moemesh.proto.expert.v1.SharedFrame;
import io.moemesh.proto.tensor.WireTensors;
import io.moemesh.telemetry.ExpertStepAttributes;
import io.moemesh.telemetry.testing.InMemorySpans;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.quarkus.grpc.GrpcClient;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.smallrye.mutiny.Multi;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/** A routed shard (0 of 2, 2 redundant slots) on the tiny model over real gRPC, against the experts computed in this JVM. */
@QuarkusTest
@QuarkusTestResource(TinyExpertsResource.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ExpertsServiceTest {
  static final Duration TIMEOUT = Duration.ofSeconds(60);
  static Kernels kernels;
  static ModelConfig config;
  static Placement placement;
  static ExpertWeights reference;
  static int layer;

  @GrpcClient("experts")
  Experts experts;

  @Inject Tracer tracer;
  @Inject InMemorySpanExporter spans;

  @BeforeAll
  static void loadReference() {
    kernels = KernelBackend.NATIVE.open(1);
    config = ModelConfigReader.read(TinyExpertsResource.checkpoint().resolve("config.json"));
    placement = ExpertWeights.initialPlacement(config, 2, 2);
    reference = ExpertWeights.load(TinyExpertsResource.checkpoint(), Precision.INT8, kernels, ExpertSelection.ALL, null);
    layer = IntStream.range(0, 99).filter(config::isMoeLayer).findFirst().orElseThrow();
  }

  @AfterAll
  static void close() {
    reference.close();
    kernels.close();
  }

  @BeforeEach
  void awaitReady() {
    await().atMost(TIMEOUT).ignoreExceptions().until(() -> experts.info(InfoRequest.getDefaultInstance()).await().atMost(TIMEOUT) != null);
  }

  @Test
  void aDispatchFrameComesBackAsTheBitsOfTheExpertsComputedHere() {
    int[] held = placement.expertsOnShard(layer, 0);
    try (TensorArena arena = TensorArena.confined()) {
      ExpertDispatch d = dispatch(arena, 7, held, 11);
      List<CombineFrame> answers = send(List.of(frame(1, d), frame(2, dispatch(arena, 3, held, 12))));
      assertThat(answers).extracting(CombineFrame::getSeq).containsExactly(1L, 2L);
      assertThat(answers.get(0).getError()).isEmpty();
      Tensor expected = reference.experts().compute(kernels, d, arena);
      assertThat(expected.dtype()).as("A8W8 experts answer in BF16").isEqualTo(DType.BF16);
      assertThat(answers.get(0).getOutputs().getShapeList()).containsExactly((long) d.numAssignments(), (long) config.hiddenSize());
      assertThat(answers.get(0).getOutputs().getData()).isEqualTo(ByteString.copyFrom(expected.asReadOnlyBytes()));
    }
  }

  @Test
  void aBadFrameGetsAnErrorFrameAndTheStreamGoesOn() {
    int notHeld = IntStream.range(0, config.nRoutedExperts()).filter(e -> Arrays.stream(placement.expertsOnShard(layer, 0)).noneMatch(h -> h == e))
        .findFirst().orElseThrow();
    try (TensorArena arena = TensorArena.confined()) {
      var good = frame(3, dispatch(arena, 2, placement.expertsOnShard(layer, 0), 5));
      var wrongExpert = frame(1, dispatch(arena, 2, new int[] {notHeld}, 5));
      var denseLayer = good.toBuilder().setSeq(2).setLayerId(IntStream.range(0, 99).filter(i -> !config.isMoeLayer(i)).findFirst().orElseThrow()).build();
      var truncated = good.toBuilder().setSeq(4).setHidden(good.getHidden().toBuilder().setData(good.getHidden().getData().substring(1))).build();
      var unknownExpert = good.toBuilder().setSeq(5).setExperts(ints(new int[] {config.nRoutedExperts()}))
          .setExpertEnds(ints(new int[] {(int) good.getTokenIndex().getShape(0)})).build();
      List<CombineFrame> answers = send(List.of(wrongExpert, denseLayer, good, truncated, unknownExpert));
      assertThat(answers.get(0).getError()).contains("expert " + notHeld).contains("not held");
      assertThat(answers.get(1).getError()).contains("not a MoE layer");
      assertThat(answers.get(2).getError()).isEmpty();
      assertThat(answers.get(2).hasOutputs()).isTrue();
      assertThat(answers.get(3).getError()).contains("hidden").contains("bytes");
      assertThat(answers.get(4).getError()).contains("expert " + config.nRoutedExperts()).contains("outside the " + config.nRoutedExperts() + " experts");
    }
  }

  @Test
  void eachTracedStepOfAStreamIsOneSpanOfTheCallersStepAndAnUntracedOneNone() {
    int[] held = placement.expertsOnShard(layer, 0);
    int otherLayer = IntStream.range(layer + 1, 99).filter(config::isMoeLayer).findFirst().orElseThrow();
    String first = traceparent(tracer.spanBuilder("test step 1").startSpan()), second = traceparent(tracer.spanBuilder("test step 2").startSpan());
    spans.reset();
    try (TensorArena arena = TensorArena.confined()) {
      ExpertDispatch d = dispatch(arena, 5, held, 31);
      var untraced = frame(1, d);
      var malformed = untraced.toBuilder().setSeq(2).setTraceparent("00-not-a-trace-01").build();
      var unsampled = untraced.toBuilder().setSeq(3).setTraceparent(first.substring(0, first.length() - 2) + "00").build();
      var step1Layer = untraced.toBuilder().setSeq(4).setTraceparent(first).build();
      var step1OtherLayer = step1Layer.toBuilder().setSeq(5).setLayerId(otherLayer).build();
      var step2 = untraced.toBuilder().setSeq(6).setTraceparent(second).build();
      List<CombineFrame> answers = send(List.of(untraced, malformed, unsampled, step1Layer, step1OtherLayer, step2));
      assertThat(answers).extracting(CombineFrame::getError).containsOnly("");

      List<SpanData> steps = InMemorySpans.awaitSpans(spans, s -> s.getName().equals(StepSpans.DISPATCH), 2);
      SpanData span = steps.stream().filter(s -> s.getParentSpanId().equals(spanId(first))).findFirst().orElseThrow();
      assertThat(span.getKind()).isEqualTo(SpanKind.SERVER);
      assertThat(span.getTraceId()).isEqualTo(first.substring(3, 35));
      var a = span.getAttributes();
      assertThat(a.get(ExpertStepAttributes.SHARD)).isZero();
      assertThat(a.get(ExpertStepAttributes.FRAMES)).isEqualTo(2);
      assertThat(a.get(ExpertStepAttributes.LAYERS)).isEqualTo(2);
      assertThat(a.get(ExpertStepAttributes.LAYER_IDS)).containsExactly((long) layer, (long) otherLayer);
      assertThat(a.get(ExpertStepAttributes.TOKENS)).isEqualTo(2 * 5);
      assertThat(a.get(ExpertStepAttributes.ROWS)).isEqualTo(2L * d.numAssignments());
      assertThat(a.get(ExpertStepAttributes.DISPATCH_SIZE)).isEqualTo((long) step1Layer.getSerializedSize() + step1OtherLayer.getSerializedSize());
      assertThat(a.get(ExpertStepAttributes.COMBINE_SIZE)).as("what went back: BF16 rows (assignments × hidden × 2) and framing")
          .isEqualTo((long) answers.get(3).getSerializedSize() + answers.get(4).getSerializedSize())
          .isBetween(2L * d.numAssignments() * config.hiddenSize() * 2, 2L * d.numAssignments() * config.hiddenSize() * 2 + 2 * 64);
      assertThat(a.get(ExpertStepAttributes.COMPUTE_DURATION)).isPositive();
      assertThat(a.get(ExpertStepAttributes.QUEUE_DURATION)).isNotNegative();
      assertThat(a.get(ExpertStepAttributes.PLACEMENT_VERSION)).isZero();
      assertThat(span.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
      assertThat(span.getEndEpochNanos() - span.getStartEpochNanos()).as("from the first frame's arrival to the last answer")
          .isGreaterThanOrEqualTo((long) (a.get(ExpertStepAttributes.COMPUTE_DURATION) * 1e9));
      SpanData next = steps.stream().filter(s -> s.getParentSpanId().equals(spanId(second))).findFirst().orElseThrow();
      assertThat(next.getAttributes().get(ExpertStepAttributes.FRAMES)).isEqualTo(1);
      assertThat(next.getEndEpochNanos()).as("the next step's frame was computed after this one's").isGreaterThan(span.getEndEpochNanos());
      // frames run in order on one thread: the untraced, malformed and unsampled ones made no span
      assertThat(spans.getFinishedSpanItems()).filteredOn(s -> s.getName().equals(StepSpans.DISPATCH) || s.getName().equals(StepSpans.SHARED))
          .hasSize(2);
    }
    var refused = experts.shared(Multi.createFrom().item(SharedFrame.newBuilder().setSeq(9).setLayerId(layer).setTraceparent(first).build()))
        .collect().asList().await().atMost(TIMEOUT);
    assertThat(refused).singleElement().satisfies(f -> assertThat(f.getError()).isNotEmpty());
    SpanData failed = InMemorySpans.awaitSpan(spans, s -> s.getName().equals(StepSpans.SHARED));
    assertThat(failed.getParentSpanId()).isEqualTo(spanId(first));
    assertThat(failed.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(failed.getStatus().getDescription()).contains("routed-expert shard");
    assertThat(failed.getAttributes().get(ExpertStepAttributes.FAILED_FRAMES)).isEqualTo(1);
    assertThat(failed.getEvents()).singleElement().satisfies(e -> assertThat(e.getName()).isEqualTo(StepSpans.FRAME_FAILED));
  }

  @Test
  void aStepsSpanEndsWhenTheEngineGoesIdleWhileItsStreamStaysOpen() {
    String step = traceparent(tracer.spanBuilder("test step").startSpan());
    spans.reset();
    var frames = io.smallrye.mutiny.operators.multi.processors.UnicastProcessor.<DispatchFrame>create();
    var answers = new java.util.concurrent.CopyOnWriteArrayList<CombineFrame>();
    var stream = experts.dispatch(frames).subscribe().with(answers::add, e -> {});
    try (TensorArena arena = TensorArena.confined()) {
      frames.onNext(frame(1, dispatch(arena, 3, placement.expertsOnShard(layer, 0), 17)).toBuilder().setTraceparent(step).build());
      await().atMost(TIMEOUT).until(() -> answers.size() == 1);
      SpanData span = InMemorySpans.awaitSpan(spans, s -> s.getName().equals(StepSpans.DISPATCH));
      assertThat(span.getParentSpanId()).isEqualTo(spanId(step));
      assertThat(span.getAttributes().get(ExpertStepAttributes.FRAMES)).isEqualTo(1);
    } finally {
      frames.onComplete();
      stream.cancel();
    }
  }

  private static String traceparent(Span step) {
    step.end();
    return "00-" + step.getSpanContext().getTraceId() + "-" + step.getSpanContext().getSpanId() + "-01";
  }

  private static String spanId(String traceparent) {
    return traceparent.substring(36, 52);
  }

  @Test
  void theWarningOfAFailedTracedFrameCarriesItsTraceAndAnUntracedOnesNone() {
    Span step = tracer.spanBuilder("test step").startSpan();
    step.end();
    String traceId = step.getSpanContext().getTraceId();
    String traceparent = "00-" + traceId + "-" + step.getSpanContext().getSpanId() + "-01";
    spans.reset();
    var warnings = new java.util.concurrent.ConcurrentLinkedQueue<String[]>(); // message, MDC traceId, MDC spanId
    var handler = new java.util.logging.Handler() {
      @Override
      public void publish(java.util.logging.LogRecord r) { // on the compute thread, as the line is logged
        var ext = (org.jboss.logmanager.ExtLogRecord) r;
        warnings.add(new String[] {ext.getFormattedMessage(), ext.getMdc("traceId"), ext.getMdc("spanId")});
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    var logger = java.util.logging.Logger.getLogger(ExpertHost.class.getName());
    logger.addHandler(handler);
    try (TensorArena arena = TensorArena.confined()) {
      int dense = IntStream.range(0, 99).filter(i -> !config.isMoeLayer(i)).findFirst().orElseThrow();
      var tracedDense = frame(1, dispatch(arena, 2, placement.expertsOnShard(layer, 0), 5)).toBuilder().setLayerId(dense)
          .setTraceparent(traceparent).build();
      var untracedDense = tracedDense.toBuilder().setSeq(2).clearTraceparent().build();
      assertThat(send(List.of(tracedDense, untracedDense))).extracting(CombineFrame::getError).allSatisfy(e -> assertThat(e).contains("not a MoE layer"));
    } finally {
      logger.removeHandler(handler);
    }
    SpanData span = InMemorySpans.awaitSpan(spans, s -> s.getName().equals(StepSpans.DISPATCH));
    assertThat(warnings).hasSize(2);
    String[] traced = warnings.poll(), untraced = warnings.poll();
    assertThat(traced[0]).contains("dispatch frame 1").contains("not a MoE layer");
    assertThat(traced[1]).as("the traced frame's warning: the caller's trace").isEqualTo(traceId);
    assertThat(traced[2]).as("and its step's span on this shard").isEqualTo(span.getSpanId());
    assertThat(untraced[0]).contains("dispatch frame 2");
    assertThat(untraced[1]).as("the next, untraced frame's: no trace left over on the compute thread").isNotEqualTo(traceId);
  }

  @Test
  void sharedFramesAreRefusedByARoutedShard() {
    var answer = experts.shared(Multi.createFrom().item(SharedFrame.newBuilder().setSeq(9).setLayerId(layer).build()))
        .collect().asList().await().atMost(TIMEOUT);
    assertThat(answer).singleElement().satisfies(f -> assertThat(f.getError()).contains("routed-expert shard"));
  }

  @Test
  void infoListsTheExpertsOfItsSlotsAndLoadCountsTheirTokens() {
    var info = experts.info(InfoRequest.getDefaultInstance()).await().atMost(TIMEOUT);
    assertThat(info.getRole()).isEqualTo(ExpertRole.EXPERT_ROLE_ROUTED);
    assertThat(info.getNumShards()).isEqualTo(2);
    var first = info.getHeldList().stream().filter(l -> l.getLayerId() == layer).findFirst().orElseThrow();
    assertThat(first.getExpertsList()).containsExactlyElementsOf(Arrays.stream(placement.expertsOnShard(layer, 0)).boxed().toList());

    int expert = placement.expertsOnShard(layer, 0)[0];
    long before = tokens(layer, expert);
    try (TensorArena arena = TensorArena.confined()) {
      send(List.of(frame(1, dispatch(arena, 6, new int[] {expert}, 21))));
    }
    assertThat(tokens(layer, expert) - before).isEqualTo(6);
    var inUse = experts.load(ExpertLoadRequest.getDefaultInstance()).await().atMost(TIMEOUT).getPlacementsInUseList();
    assertThat(inUse).as("the balancer's settle check: versions of recent frames").singleElement()
        .satisfies(v -> assertThat(v.getPlacementVersion()).isZero()).satisfies(v -> assertThat(v.getIdleMillis()).isBetween(0L, 60_000L));
    assertThat(info.hasActivePlacement()).as("no balancer here").isFalse();
  }

  @Test
  @Order(Integer.MAX_VALUE) // changes what the shard holds: the other tests see the starting placement
  void aPreparedPlacementLoadsTheExpertsItMovesHere() {
    int moved = IntStream.range(0, config.nRoutedExperts()).filter(e -> Arrays.stream(placement.expertsOnShard(layer, 0)).noneMatch(h -> h == e))
        .findFirst().orElseThrow();
    // the next placement: shard 1's first slot trades places with shard 0's first, in every MoE layer
    var table = PlacementTable.newBuilder().setVersion(placement.version() + 1).setNumShards(2).setNumExperts(config.nRoutedExperts());
    for (int l = 0; l < placement.numLayers(); l++) {
      if (!placement.isMoeLayer(l)) continue;
      int[] slots = placement.physicalToLogical(l);
      int a = 0, b = IntStream.range(placement.slotsPerShard(), slots.length).filter(s -> slots[s] == moved).findFirst().orElseThrow();
      int t = slots[a];
      slots[a] = slots[b];
      slots[b] = t;
      table.addLayers(LayerSlots.newBuilder().setLayerId(l).addAllPhysicalToLogical(Arrays.stream(slots).boxed().toList()));
    }
    var answer = experts.prepare(table.build()).await().atMost(TIMEOUT);
    assertThat(answer.getPlacementVersion()).isEqualTo(placement.version() + 1);
    assertThat(experts.prepare(table.build()).await().atMost(TIMEOUT).getPlacementVersion()).as("again: nothing to do").isEqualTo(placement.version() + 1);
    var sameVersionOtherSlots = PlacementTables.toProto(placement.withVersion(placement.version() + 1));
    assertThatThrownBy(() -> experts.prepare(sameVersionOtherSlots).await().atMost(TIMEOUT))
        .hasMessageContaining("FAILED_PRECONDITION").hasMessageContaining("other slots");
    assertThatThrownBy(() -> experts.prepare(PlacementTables.toProto(placement)).await().atMost(TIMEOUT))
        .hasMessageContaining("FAILED_PRECONDITION").hasMessageContaining("not above the newest prepared here, 1");
    try (TensorArena arena = TensorArena.confined()) {
      ExpertDispatch d = dispatch(arena, 4, new int[] {moved}, 8);
      CombineFrame got = send(List.of(frame(1, d))).get(0);
      assertThat(got.getError()).isEmpty();
      assertThat(got.getOutputs().getData()).isEqualTo(ByteString.copyFrom(reference.experts().compute(kernels, d, arena).asReadOnlyBytes()));
    }
  }

  private long tokens(int layerId, int expert) {
    var report = experts.load(ExpertLoadRequest.getDefaultInstance()).await().atMost(TIMEOUT);
    return report.getLayersList().stream().filter(l -> l.getLayerId() == layerId).findFirst().orElseThrow().getTokensPerExpert(expert);
  }

  private List<CombineFrame> send(List<DispatchFrame> frames) {
    return experts.dispatch(Multi.createFrom().iterable(frames)).collect().asList().await().atMost(TIMEOUT);
  }

  /** {@code tokens} random INT8 hidden states; each token goes to 1-2 of {@code expertIds}. */
  private static ExpertDispatch dispatch(TensorArena arena, int tokens, int[] expertIds, long seed) {
    var random = new SplittableRandom(seed);
    Tensor hidden = arena.allocate(DType.I8, tokens, config.hiddenSize()), scales = arena.allocate(DType.F32, tokens);
    for (long i = 0; i < hidden.numElements(); i++) hidden.setByte(i, (byte) (random.nextInt(255) - 127));
    for (int t = 0; t < tokens; t++) scales.setFloat(t, 0.01f * (1 + random.nextFloat()));
    int[] offsets = new int[config.nRoutedExperts() + 1];
    List<Integer> tokenIndex = new ArrayList<>();
    for (int e = 0; e < config.nRoutedExperts(); e++) {
      final int expert = e;
      if (Arrays.stream(expertIds).anyMatch(x -> x == expert))
        for (int t = 0; t < tokens; t++) if (expertIds.length == 1 || random.nextBoolean()) tokenIndex.add(t);
      offsets[e + 1] = tokenIndex.size();
    }
    return new ExpertDispatch(layer, 0, hidden, scales, offsets, tokenIndex.stream().mapToInt(Integer::intValue).toArray());
  }

  private static DispatchFrame frame(long seq, ExpertDispatch d) {
    var groups = ExpertDispatch.Groups.of(d.expertOffsets());
    return DispatchFrame.newBuilder().setSeq(seq).setLayerId(d.layerId()).setPlacementVersion(d.placementVersion())
        .setHidden(KernelTensors.write(d.hidden())).setScales(KernelTensors.write(d.scales()))
        .setExperts(ints(groups.experts())).setExpertEnds(ints(groups.ends())).setTokenIndex(ints(d.tokenIndex())).build();
  }

  private static io.moemesh.proto.common.v1.Tensor ints(int[] values) {
    return WireTensors.ints(values);
  }
}
