package io.moemesh.telemetry;

import io.opentelemetry.api.common.AttributeKey;
import java.util.List;

/**
 * The attributes of one engine step's traffic with one expert service, the same on both ends of the stream: the engine's
 * CLIENT span {@code experts dispatch} / {@code experts shared} ({@code engine-host/…/ExpertStepSpans}) and the
 * service's SERVER span {@code moemesh.expert.dispatch} / {@code moemesh.expert.shared} (expert-svc's {@code StepSpans}),
 * its child. Sizes are serialized frame bytes; durations are seconds, summed over the step's frames (OpenTelemetry's
 * {@code *.size} and {@code *.duration} conventions; project-specific keys under {@code moemesh.}).
 */
public final class ExpertStepAttributes {
  /** Routed: the shard's index. */
  public static final AttributeKey<Long> SHARD = AttributeKey.longKey("moemesh.expert.shard");
  /** Frames of the step on this stream: one per MoE layer (and per micro-batch), more when assignments were sent again. */
  public static final AttributeKey<Long> FRAMES = AttributeKey.longKey("moemesh.expert.frames");
  /** Distinct MoE layers the frames covered. */
  public static final AttributeKey<Long> LAYERS = AttributeKey.longKey("moemesh.expert.layers");
  /** Those layers' ids, ascending. */
  public static final AttributeKey<List<Long>> LAYER_IDS = AttributeKey.longArrayKey("moemesh.expert.layer_ids");
  /** Hidden-state rows dispatched (a token once per frame), summed over the frames. */
  public static final AttributeKey<Long> TOKENS = AttributeKey.longKey("moemesh.expert.tokens");
  /** Output rows combined: assignments (routed) or tokens (shared), summed over the frames. */
  public static final AttributeKey<Long> ROWS = AttributeKey.longKey("moemesh.expert.rows");
  /** Bytes of the DispatchFrames / SharedFrames (engine → service). */
  public static final AttributeKey<Long> DISPATCH_SIZE = AttributeKey.longKey("moemesh.expert.dispatch.size");
  /** Bytes of the CombineFrames (service → engine). */
  public static final AttributeKey<Long> COMBINE_SIZE = AttributeKey.longKey("moemesh.expert.combine.size");
  /** The placement version of the step's last dispatch frame (routed). */
  public static final AttributeKey<Long> PLACEMENT_VERSION = AttributeKey.longKey("moemesh.expert.placement_version");
  /** Frames answered with an error (the span's status is then ERROR with the first one's reason). */
  public static final AttributeKey<Long> FAILED_FRAMES = AttributeKey.longKey("moemesh.expert.failed_frames");
  /** Service: seconds the frames computed on its compute thread. */
  public static final AttributeKey<Double> COMPUTE_DURATION = AttributeKey.doubleKey("moemesh.expert.compute.duration");
  /** Service: seconds the frames waited for the compute thread (queued behind other streams' frames). */
  public static final AttributeKey<Double> QUEUE_DURATION = AttributeKey.doubleKey("moemesh.expert.queue.duration");
  /** Engine: seconds from sending each frame to its answer (the network, the service's queue and compute). */
  public static final AttributeKey<Double> ROUND_TRIP_DURATION = AttributeKey.doubleKey("moemesh.expert.round_trip.duration");

  /** OpenTelemetry's RPC conventions: {@code grpc}, the service {@code moemesh.expert.v1.Experts}, the stream's method. */
  public static final AttributeKey<String> RPC_SYSTEM = AttributeKey.stringKey("rpc.system");
  public static final AttributeKey<String> RPC_SERVICE = AttributeKey.stringKey("rpc.service");
  public static final AttributeKey<String> RPC_METHOD = AttributeKey.stringKey("rpc.method");
  /** Engine: the expert service's address as configured ({@code host:port}). */
  public static final AttributeKey<String> SERVER_ADDRESS = AttributeKey.stringKey("server.address");
  public static final String SERVICE = "moemesh.expert.v1.Experts";

  private ExpertStepAttributes() {}
}
