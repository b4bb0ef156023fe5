package io.moemesh.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.model.ModelConfig;
import io.opentelemetry.proto.trace.v1.Span.SpanKind;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.IntStream;

/**
 * What one request's trace must show of its expert traffic (docs/architecture.md, Observability): each engine step's
 * calls to the shared experts and the routed shards as CLIENT spans, each with the expert service's SERVER span as its
 * child, both ends carrying the same figures of the step.
 */
final class ExpertStepTrace {
  private ExpertStepTrace() {}

  /** {@code trace}: every span of one request, complete; {@code config}: the served model's. */
  static void assertEveryStepSpansBothEnds(List<OtlpReceiver.ReceivedSpan> trace, ModelConfig config) {
    Map<String, OtlpReceiver.ReceivedSpan> byId = new HashMap<>();
    for (var s : trace) byId.put(s.spanId(), s);
    var steps = trace.stream().filter(s -> s.name().equals("engine step")).toList();
    assertThat(steps).allSatisfy(step -> assertThat(byId.get(step.parentSpanId()).name()).isIn("prefill tiny", "decode tiny"));
    List<Long> moeLayers = IntStream.range(0, config.numHiddenLayers()).filter(config::isMoeLayer).mapToObj(l -> (long) l).toList();
    long hidden = config.hiddenSize();
    var served = trace.stream().filter(s -> s.service().equals("expert-svc")).toList();
    assertThat(served).hasSizeGreaterThanOrEqualTo(3 * 2); // a prefill step and at least one decode step, each on both shards and the shared service
    for (var step : steps) {
      var calls = trace.stream().filter(s -> s.parentSpanId().equals(step.spanId()) && s.name().startsWith("experts ")).toList();
      assertThat(calls).as("a step's traffic: the shared experts and one or both routed shards").hasSizeBetween(2, 3);
      assertThat(calls.stream().filter(c -> c.name().equals("experts shared")).map(c -> layerIds(c)).toList())
          .as("the shared experts see every MoE layer").containsExactly(moeLayers);
      assertThat(calls.stream().filter(c -> c.name().equals("experts dispatch")).flatMap(c -> layerIds(c).stream()).distinct().sorted().toList())
          .as("the routed shards, between them, too").isEqualTo(moeLayers);
    }
    assertThat(served).allSatisfy(s -> {
      var call = byId.get(s.parentSpanId());
      assertThat(s.kind()).isEqualTo(SpanKind.SPAN_KIND_SERVER);
      assertThat(call.kind()).isEqualTo(SpanKind.SPAN_KIND_CLIENT);
      assertThat(call.name()).isEqualTo(s.name().equals("moemesh.expert.shared") ? "experts shared" : "experts dispatch");
      assertThat(byId.get(call.parentSpanId()).name()).isEqualTo("engine step");
      for (String key : List.of("moemesh.expert.frames", "moemesh.expert.layers", "moemesh.expert.layer_ids", "moemesh.expert.tokens",
          "moemesh.expert.rows", "moemesh.expert.dispatch.size", "moemesh.expert.combine.size"))
        assertThat(s.attributes().get(key)).as(key + ": the same on both ends").isNotNull().isEqualTo(call.attributes().get(key));
      assertThat(s.attributes().get("moemesh.expert.shard")).isEqualTo(call.attributes().get("moemesh.expert.shard"));
      long frames = attribute(s, "moemesh.expert.frames"), tokens = attribute(s, "moemesh.expert.tokens"), rows = attribute(s, "moemesh.expert.rows");
      assertThat(attribute(s, "moemesh.expert.layers")).isBetween(1L, (long) moeLayers.size()).isLessThanOrEqualTo(frames);
      assertThat(tokens).isPositive();
      long routing = s.name().equals("moemesh.expert.shared") ? 0 : 4 * rows; // token_index; plus the expert groups in the framing
      assertThat(attribute(s, "moemesh.expert.dispatch.size")).as("INT8 rows and their scales, routing, framing")
          .isBetween(tokens * (hidden + 4) + routing, tokens * (hidden + 4) + routing + frames * 256);
      assertThat(attribute(s, "moemesh.expert.combine.size")).as("BF16 rows and framing").isBetween(rows * hidden * 2, rows * hidden * 2 + frames * 32);
      assertThat(seconds(s, "moemesh.expert.compute.duration")).isPositive();
      assertThat(seconds(s, "moemesh.expert.queue.duration")).isNotNegative();
      assertThat(seconds(call, "moemesh.expert.round_trip.duration")).as("the engine's wait covers the service's queue and compute")
          .isGreaterThanOrEqualTo(seconds(s, "moemesh.expert.compute.duration"));
    });
  }

  private static long attribute(OtlpReceiver.ReceivedSpan span, String key) {
    return Long.parseLong(span.attributes().get(key));
  }

  /** A double attribute, as protobuf prints it ({@code double_value: 0.25}). */
  private static double seconds(OtlpReceiver.ReceivedSpan span, String key) {
    return Double.parseDouble(span.attributes().get(key).replace("double_value:", "").trim());
  }

  /** An array attribute of longs, as protobuf prints it. */
  private static List<Long> layerIds(OtlpReceiver.ReceivedSpan span) {
    var m = Pattern.compile("int_value: (\\d+)").matcher(span.attributes().get("moemesh.expert.layer_ids"));
    List<Long> out = new ArrayList<>();
    while (m.find()) out.add(Long.parseLong(m.group(1)));
    return out;
  }
}
