package io.moemesh.enginehost.telemetry;

import io.opentelemetry.api.common.AttributeKey;
import java.util.List;

/**
 * Span attributes of the OpenTelemetry GenAI semantic conventions
 * (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/) that the engine services set, and ours
 * ({@code moemesh.*}). Spelled out here rather than taken from the incubating semconv artifact, whose names move.
 */
public final class GenAiAttributes {
  public static final AttributeKey<String> OPERATION_NAME = AttributeKey.stringKey("gen_ai.operation.name");
  public static final AttributeKey<String> PROVIDER_NAME = AttributeKey.stringKey("gen_ai.provider.name");
  public static final AttributeKey<String> REQUEST_MODEL = AttributeKey.stringKey("gen_ai.request.model");
  public static final AttributeKey<Long> REQUEST_MAX_TOKENS = AttributeKey.longKey("gen_ai.request.max_tokens");
  public static final AttributeKey<Double> REQUEST_TEMPERATURE = AttributeKey.doubleKey("gen_ai.request.temperature");
  public static final AttributeKey<Double> REQUEST_TOP_P = AttributeKey.doubleKey("gen_ai.request.top_p");
  public static final AttributeKey<Long> REQUEST_SEED = AttributeKey.longKey("gen_ai.request.seed");
  public static final AttributeKey<String> RESPONSE_ID = AttributeKey.stringKey("gen_ai.response.id");
  public static final AttributeKey<String> RESPONSE_MODEL = AttributeKey.stringKey("gen_ai.response.model");
  public static final AttributeKey<List<String>> RESPONSE_FINISH_REASONS =
      AttributeKey.stringArrayKey("gen_ai.response.finish_reasons");
  public static final AttributeKey<Long> USAGE_INPUT_TOKENS = AttributeKey.longKey("gen_ai.usage.input_tokens");
  public static final AttributeKey<Long> USAGE_OUTPUT_TOKENS = AttributeKey.longKey("gen_ai.usage.output_tokens");
  /** The semantic conventions' error attribute: a low-cardinality class of the failure. */
  public static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");

  /** {@code gen_ai.operation.name} of the engine RPCs: they complete a sequence of token ids. */
  public static final String TEXT_COMPLETION = "text_completion";
  /** {@code gen_ai.provider.name}: the mesh serves its own models. */
  public static final String PROVIDER = "moemesh";

  /** The KV object a transfer moves (kv-store's key: the request id). */
  public static final AttributeKey<String> KV_OBJECT_KEY = AttributeKey.stringKey("moemesh.kv.object_key");
  /** Row bytes a transfer moved. */
  public static final AttributeKey<Long> KV_BYTES = AttributeKey.longKey("moemesh.kv.bytes");
  /** The kv-store a transfer talks to, {@code host:port}. */
  public static final AttributeKey<String> KV_STORE = AttributeKey.stringKey("moemesh.kv.store");
  /** How a put ended: {@code committed}, {@code revoked} or {@code failed}. */
  public static final AttributeKey<String> KV_OUTCOME = AttributeKey.stringKey("moemesh.kv.outcome");
  /** Speculative decoding (MTP): draft tokens verified for the request; set only when it verified some. */
  public static final AttributeKey<Long> SPEC_DECODE_DRAFT_TOKENS = AttributeKey.longKey("moemesh.spec_decode.draft_tokens");
  /** Of those, the ones accepted (acceptance rate = accepted / draft tokens). */
  public static final AttributeKey<Long> SPEC_DECODE_ACCEPTED_TOKENS = AttributeKey.longKey("moemesh.spec_decode.accepted_tokens");
  /** The engine's request id (the RPC's {@code request_id}). */
  public static final AttributeKey<String> REQUEST_ID = AttributeKey.stringKey("moemesh.request.id");

  private GenAiAttributes() {}

  /** A finish reason for {@code gen_ai.response.finish_reasons}: the proto enum's name, {@code FINISH_REASON_STOP → stop}. */
  public static String finishReason(Enum<?> protoFinishReason) {
    String name = protoFinishReason.name();
    String prefix = "FINISH_REASON_";
    return (name.startsWith(prefix) ? name.substring(prefix.length()) : name).toLowerCase(java.util.Locale.ROOT);
  }
}
