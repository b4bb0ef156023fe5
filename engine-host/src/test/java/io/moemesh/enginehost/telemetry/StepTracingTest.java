package io.moemesh.enginehost.telemetry;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.stub.StreamObserver;
import io.moemesh.engine.ScheduledChunk;
import io.moemesh.engine.SchedulerOutput;
import io.moemesh.engine.StepObserver;
import io.moemesh.engine.experts.ExpertTransport;
import io.moemesh.enginehost.ConfigMappings;
import io.moemesh.enginehost.ExpertsConfig;
import io.moemesh.enginehost.experts.GrpcExpertTransport;
import io.moemesh.kernels.DType;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.Precision;
import io.moemesh.model.moe.ExpertDispatch;
import io.moemesh.proto.common.v1.Tensor;
import io.moemesh.proto.expert.v1.CombineFrame;
import io.moemesh.proto.expert.v1.DispatchFrame;
import io.moemesh.proto.expert.v1.ExpertRole;
import io.moemesh.proto.expert.v1.ExpertServiceInfo;
import io.moemesh.proto.expert.v1.ExpertsGrpc;
import io.moemesh.proto.expert.v1.InfoRequest;
import io.moemesh.proto.expert.v1.LayerExperts;
import io.moemesh.telemetry.ExpertStepAttributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The step span, its span of the traffic with each expert service and the context the frames carry, over real gRPC: a routed shard that records the
 * frames it is sent (and answers each with empty outputs) behind {@link GrpcExpertTransport}.
 */
class StepTracingTest {
  private final InMemorySpanExporter spans = InMemorySpanExporter.create();
  private final SdkTracerProvider provider = SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build();
  private final Tracer tracer = provider.get("test");
  private final List<DispatchFrame> received = new CopyOnWriteArrayList<>();
  private Server shard;
  private ExpertTransport transport;

  @BeforeEach
  void startShard() throws Exception {
    shard = ServerBuilder.forPort(0).addService(new RecordingShard()).build().start();
    var config = Map.of("moemesh.experts.routed", "remote", "moemesh.experts.shards", "localhost:" + shard.getPort());
    transport = GrpcExpertTransport.connect(ConfigMappings.read(ExpertsConfig.class, config).settings(), Precision.EXACT);
  }

  @AfterEach
  void stop() throws Exception {
    transport.close();
    shard.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    provider.close();
  }

  @Test
  void aStepOfATracedRequestIsItsChildAndItsFramesCarryTheContextOfItsCallToTheShard() throws Exception {
    var steps = new StepTracing(tracer);
    Span request = tracer.spanBuilder("decode tiny").startSpan();
    Span other = tracer.spanBuilder("decode tiny").startSpan();
    Context requestContext = Context.root().with(request), otherContext = Context.root().with(other);
    steps.started("r1", requestContext);
    steps.started("r2", otherContext);

    try (StepObserver.Step step = steps.begin(plan("untraced", "r1", "r2"))) {
      send(1);
      send(3);
    }
    send(1); // after the step: no context
    SpanData stepSpan = spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals(StepTracing.NAME)).findFirst().orElseThrow();
    assertThat(stepSpan.getTraceId()).isEqualTo(request.getSpanContext().getTraceId());
    assertThat(stepSpan.getParentSpanId()).as("the first traced request's span").isEqualTo(request.getSpanContext().getSpanId());
    assertThat(stepSpan.getLinks()).extracting(l -> l.getSpanContext().getSpanId()).containsExactly(other.getSpanContext().getSpanId());
    assertThat(stepSpan.getAttributes().get(StepTracing.REQUESTS)).isEqualTo(3);
    assertThat(stepSpan.getAttributes().get(StepTracing.TOKENS)).isEqualTo(3);
    SpanData call = spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals(ExpertStepSpans.DISPATCH)).findFirst().orElseThrow();
    assertThat(call.getKind()).isEqualTo(io.opentelemetry.api.trace.SpanKind.CLIENT);
    assertThat(call.getParentSpanId()).as("the step's traffic with shard 0").isEqualTo(stepSpan.getSpanId());
    String traceparent = "00-" + call.getTraceId() + "-" + call.getSpanId() + "-01";
    assertThat(received).extracting(DispatchFrame::getTraceparent).containsExactly(traceparent, traceparent, "");
    var a = call.getAttributes();
    assertThat(a.get(ExpertStepAttributes.SHARD)).isZero();
    assertThat(a.get(ExpertStepAttributes.SERVER_ADDRESS)).isEqualTo("localhost:" + shard.getPort());
    assertThat(a.get(ExpertStepAttributes.FRAMES)).isEqualTo(2);
    assertThat(a.get(ExpertStepAttributes.LAYER_IDS)).containsExactly(1L, 3L);
    assertThat(a.get(ExpertStepAttributes.LAYERS)).isEqualTo(2);
    assertThat(a.get(ExpertStepAttributes.TOKENS)).isEqualTo(2);
    assertThat(a.get(ExpertStepAttributes.ROWS)).isEqualTo(2);
    assertThat(a.get(ExpertStepAttributes.DISPATCH_SIZE)).isEqualTo((long) received.get(0).getSerializedSize() + received.get(1).getSerializedSize());
    assertThat(a.get(ExpertStepAttributes.COMBINE_SIZE)).isEqualTo(2L * answer(received.get(0)).getSerializedSize());
    assertThat(a.get(ExpertStepAttributes.ROUND_TRIP_DURATION)).isPositive();
    assertThat(call.getStatus().getStatusCode()).isEqualTo(io.opentelemetry.api.trace.StatusCode.UNSET);
    assertThat(call.getEndEpochNanos()).as("at its last answer, within the step").isBetween(call.getStartEpochNanos(), stepSpan.getEndEpochNanos());

    steps.ended("r1", requestContext);
    steps.ended("r2", otherContext);
    spans.reset();
    try (StepObserver.Step step = steps.begin(plan("r1", "r2"))) {
      assertThat(step).as("no request of this step is traced any more").isSameAs(StepObserver.Step.NONE);
      send(1);
    }
    assertThat(spans.getFinishedSpanItems()).isEmpty();
    assertThat(received.getLast().getTraceparent()).isEmpty();
  }

  @Test
  void anUnsampledRequestMakesNoStepSpanAndSendsNoContext() throws Exception {
    Tracer unsampled = SdkTracerProvider.builder().setSampler(Sampler.alwaysOff()).addSpanProcessor(SimpleSpanProcessor.create(spans)).build()
        .get("test");
    var steps = new StepTracing(unsampled);
    Span request = unsampled.spanBuilder("decode tiny").startSpan();
    assertThat(request.getSpanContext().isValid()).isTrue();
    steps.started("r1", Context.root().with(request));
    try (StepObserver.Step step = steps.begin(plan("r1"))) {
      assertThat(step).isSameAs(StepObserver.Step.NONE);
      try (var ignored = Context.root().with(request).makeCurrent()) {
        send(1); // even with the unsampled span current
      }
    }
    assertThat(spans.getFinishedSpanItems()).isEmpty();
    assertThat(received.getLast().getTraceparent()).isEmpty();
  }

  /** Sends a one-token dispatch of {@code layerId} to shard 0 and waits for its answer. */
  private void send(int layerId) throws Exception {
    try (TensorArena arena = TensorArena.confined()) {
      var hidden = arena.allocate(DType.F32, 1, 4);
      transport.routed(0, new ExpertDispatch(layerId, 0, hidden, null, new int[] {0, 1}, new int[] {0})).get(5, TimeUnit.SECONDS);
    }
  }

  /** What {@link RecordingShard} answers {@code frame}: no rows. */
  private static CombineFrame answer(DispatchFrame frame) {
    return CombineFrame.newBuilder().setSeq(frame.getSeq()).setOutputs(Tensor.newBuilder()
        .setDtype(io.moemesh.proto.common.v1.DType.DTYPE_F32).addShape(0).addShape(4)).build();
  }

  private static SchedulerOutput plan(String... requestIds) {
    return new SchedulerOutput(java.util.Arrays.stream(requestIds)
        .map(id -> new ScheduledChunk(id, new int[] {7}, 0, 1, new int[] {0}, null, null, -1)).toList(), List.of());
  }

  /** Shard 0 of 1 in exact precision, holding one MoE layer: records each frame and answers it with no rows. */
  private final class RecordingShard extends ExpertsGrpc.ExpertsImplBase {
    @Override
    public void info(InfoRequest request, StreamObserver<ExpertServiceInfo> answer) {
      answer.onNext(ExpertServiceInfo.newBuilder().setRole(ExpertRole.EXPERT_ROLE_ROUTED).setShard(0).setNumShards(1).setPrecision("exact")
          .addHeld(LayerExperts.newBuilder().setLayerId(1).addExperts(0)).build());
      answer.onCompleted();
    }

    @Override
    public StreamObserver<DispatchFrame> dispatch(StreamObserver<CombineFrame> answers) {
      return new StreamObserver<>() {
        @Override
        public void onNext(DispatchFrame frame) {
          received.add(frame);
          answers.onNext(answer(frame));
        }

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {
          answers.onCompleted();
        }
      };
    }
  }
}
