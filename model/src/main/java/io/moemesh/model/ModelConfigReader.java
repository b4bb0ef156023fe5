package io.moemesh.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Reads a Hugging Face {@code config.json} of model type {@code deepseek_v3} into a {@link ModelConfig}.
 * A field the engine cannot honour (another activation, tied embeddings, softmax routing, a rope scaling
 * other than YaRN, a quantization other than FP8 blocks) is an error naming it; fields that change nothing
 * at inference are listed in {@link #INERT}; anything else unknown is reported once as a warning.
 */
public final class ModelConfigReader {
  private static final System.Logger LOG = System.getLogger(ModelConfigReader.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Fields read by this class. */
  private static final Set<String> KNOWN = Set.of("model_type", "vocab_size", "hidden_size", "intermediate_size",
      "moe_intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "q_lora_rank",
      "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "n_routed_experts", "n_shared_experts",
      "num_experts_per_tok", "n_group", "topk_group", "topk_method", "scoring_func", "norm_topk_prob",
      "routed_scaling_factor", "first_k_dense_replace", "moe_layer_freq", "num_nextn_predict_layers",
      "max_position_embeddings", "rms_norm_eps", "rope_theta", "rope_scaling", "quantization_config",
      "bos_token_id", "eos_token_id", "hidden_act", "attention_bias", "tie_word_embeddings", "attention_dropout");

  /** Fields that only matter to training or to other frameworks. */
  private static final Set<String> INERT = Set.of("architectures", "auto_map", "torch_dtype", "transformers_version",
      "use_cache", "initializer_range", "pretraining_tp", "aux_loss_alpha", "seq_aux", "ep_size", "pad_token_id",
      "rope_interleave", "_name_or_path", "dtype", "moe_layer_freq_offset");

  private ModelConfigReader() {}

  public static ModelConfig read(Path configJson) {
    JsonNode root;
    try {
      root = JSON.readTree(Files.readString(configJson));
    } catch (IOException e) {
      throw new ModelConfigException(configJson + ": cannot read: " + e.getMessage());
    }
    if (root == null || !root.isObject()) throw new ModelConfigException(configJson + ": not a JSON object");
    return parse(root, configJson.toString());
  }

  public static ModelConfig parse(JsonNode root, String source) {
    var f = new Fields(root, source);
    String modelType = f.string("model_type", "deepseek_v3");
    if (!modelType.equals("deepseek_v3") && !modelType.equals("deepseek_v2"))
      throw f.error("model_type", "'" + modelType + "' is not a DeepSeek-V3-architecture model");
    f.require(f.string("hidden_act", "silu").equals("silu"), "hidden_act", "only 'silu' is supported");
    f.require(!f.bool("attention_bias", false), "attention_bias", "attention projections with bias are not supported");
    f.require(!f.bool("tie_word_embeddings", false), "tie_word_embeddings", "tied embeddings are not supported");
    f.require(f.string("scoring_func", "sigmoid").equals("sigmoid"), "scoring_func", "only 'sigmoid' routing is supported");
    TopkMethod topkMethod;
    try {
      topkMethod = TopkMethod.of(f.string("topk_method", TopkMethod.NOAUX_TC.configName()));
    } catch (IllegalArgumentException e) {
      throw f.error("topk_method", e.getMessage());
    }

    int heads = f.positive("num_attention_heads");
    if (root.has("num_key_value_heads") && !root.get("num_key_value_heads").isNull())
      f.require(f.positive("num_key_value_heads") == heads, "num_key_value_heads", "MLA needs it equal to num_attention_heads");
    int nRouted = f.integer("n_routed_experts", 0);
    int nGroup = topkMethod == TopkMethod.GREEDY ? 1 : f.integer("n_group", 1);
    int topkGroup = topkMethod == TopkMethod.GREEDY ? 1 : f.integer("topk_group", 1);
    int topk = f.integer("num_experts_per_tok", nRouted > 0 ? 1 : 0);
    if (nRouted > 0) {
      f.require(nGroup >= 1 && nRouted % nGroup == 0, "n_group", nGroup + " does not divide n_routed_experts " + nRouted);
      f.require(topkGroup >= 1 && topkGroup <= nGroup, "topk_group", "must be in [1, n_group]");
      f.require(topk >= 1 && topk <= nRouted / nGroup * topkGroup, "num_experts_per_tok",
          topk + " exceeds the experts of the kept groups");
    }
    var config = new ModelConfig(
        f.positive("vocab_size"), f.positive("hidden_size"), f.positive("intermediate_size"),
        nRouted > 0 ? f.positive("moe_intermediate_size") : f.integer("moe_intermediate_size", 0),
        f.positive("num_hidden_layers"), heads, f.nonNegative("q_lora_rank"), f.positive("kv_lora_rank"),
        f.positive("qk_nope_head_dim"), f.evenPositive("qk_rope_head_dim"), f.positive("v_head_dim"),
        nRouted, f.integer("n_shared_experts", 0), topk, nGroup, topkGroup, topkMethod,
        f.bool("norm_topk_prob", true), (float) f.number("routed_scaling_factor", 1.0),
        f.nonNegative("first_k_dense_replace"), root.has("moe_layer_freq") ? f.positive("moe_layer_freq") : 1,
        f.nonNegative("num_nextn_predict_layers"), f.positive("max_position_embeddings"),
        (float) f.number("rms_norm_eps", 1e-6), (float) f.number("rope_theta", 10000), yarn(root, f),
        quantization(root, f), f.integer("bos_token_id", 0), eosIds(root, f));
    warnUnknown(root, source);
    return config;
  }

  private static ModelConfig.Yarn yarn(JsonNode root, Fields f) {
    JsonNode rs = root.get("rope_scaling");
    if (rs == null || rs.isNull()) return null;
    var s = new Fields(rs, f.source + " rope_scaling");
    String type = rs.has("type") ? s.string("type", "") : s.string("rope_type", "");
    f.require(type.equals("yarn"), "rope_scaling.type", "'" + type + "' is not supported (only yarn)");
    float factor = (float) s.number("factor", 1.0);
    f.require(factor >= 1, "rope_scaling.factor", "must be ≥ 1");
    // DeepSeek's reference scales the softmax by mscale, Hugging Face by mscale_all_dim: equal in every released
    // config; where they differ the two disagree, so refuse rather than pick one silently.
    f.require(!rs.has("mscale") || !rs.has("mscale_all_dim") || s.number("mscale", 1) == s.number("mscale_all_dim", 1),
        "rope_scaling.mscale", "differs from mscale_all_dim; DeepSeek's reference and Hugging Face then disagree");
    return new ModelConfig.Yarn(factor, s.positive("original_max_position_embeddings"), (float) s.number("beta_fast", 32),
        (float) s.number("beta_slow", 1), (float) s.number("mscale", 1), (float) s.number("mscale_all_dim", 0));
  }

  private static ModelConfig.Fp8Quantization quantization(JsonNode root, Fields f) {
    JsonNode q = root.get("quantization_config");
    if (q == null || q.isNull()) return null;
    var s = new Fields(q, f.source + " quantization_config");
    f.require(s.string("quant_method", "").equals("fp8"), "quantization_config.quant_method", "only 'fp8' is supported");
    f.require(s.string("fmt", "e4m3").equals("e4m3"), "quantization_config.fmt", "only 'e4m3' is supported");
    f.require(s.string("activation_scheme", "dynamic").equals("dynamic"), "quantization_config.activation_scheme",
        "only 'dynamic' is supported");
    JsonNode block = q.get("weight_block_size");
    f.require(block != null && block.isArray() && block.size() == 2 && block.get(0).canConvertToInt()
        && block.get(1).canConvertToInt() && block.get(0).asInt() > 0 && block.get(1).asInt() > 0,
        "quantization_config.weight_block_size", "must be two positive integers");
    return new ModelConfig.Fp8Quantization(block.get(0).asInt(), block.get(1).asInt());
  }

  private static int[] eosIds(JsonNode root, Fields f) {
    JsonNode eos = root.get("eos_token_id");
    if (eos == null || eos.isNull()) return new int[0];
    if (eos.isArray()) {
      int[] ids = new int[eos.size()];
      for (int i = 0; i < ids.length; i++) {
        f.require(eos.get(i).canConvertToInt(), "eos_token_id", "must hold integers");
        ids[i] = eos.get(i).asInt();
      }
      return ids;
    }
    return new int[] {f.integer("eos_token_id", 1)};
  }

  private static void warnUnknown(JsonNode root, String source) {
    List<String> unknown = new ArrayList<>();
    root.fieldNames().forEachRemaining(name -> {
      if (!KNOWN.contains(name) && !INERT.contains(name)) unknown.add(name);
    });
    if (!unknown.isEmpty())
      LOG.log(Level.WARNING, source + ": fields not used by MoE Mesh (check they change nothing): " + unknown);
  }

  /** Typed access to one JSON object's fields, with errors naming the field. */
  private static final class Fields {
    final JsonNode node;
    final String source;

    Fields(JsonNode node, String source) {
      this.node = node;
      this.source = source;
    }

    ModelConfigException error(String field, String why) {
      return new ModelConfigException(source + ": " + field + ": " + why);
    }

    void require(boolean ok, String field, String why) {
      if (!ok) throw error(field, why);
    }

    private JsonNode get(String field) {
      JsonNode v = node.get(field);
      return v == null || v.isNull() ? null : v;
    }

    int integer(String field, int fallback) {
      JsonNode v = get(field);
      if (v == null) return fallback;
      require(v.isIntegralNumber() && v.canConvertToInt(), field, "must be an integer, got " + v);
      return v.asInt();
    }

    int nonNegative(String field) {
      int value = integer(field, 0);
      require(value >= 0, field, "must be ≥ 0, got " + value);
      return value;
    }

    int positive(String field) {
      JsonNode v = get(field);
      require(v != null, field, "is missing");
      int value = integer(field, 0);
      require(value > 0, field, "must be positive, got " + value);
      return value;
    }

    int evenPositive(String field) {
      int value = positive(field);
      require(value % 2 == 0, field, "must be even (rotary pairs), got " + value);
      return value;
    }

    double number(String field, double fallback) {
      JsonNode v = get(field);
      if (v == null) return fallback;
      require(v.isNumber(), field, "must be a number, got " + v);
      return v.asDouble();
    }

    boolean bool(String field, boolean fallback) {
      JsonNode v = get(field);
      if (v == null) return fallback;
      require(v.isBoolean(), field, "must be true or false, got " + v);
      return v.asBoolean();
    }

    String string(String field, String fallback) {
      JsonNode v = get(field);
      if (v == null) return fallback;
      require(v.isTextual(), field, "must be a string, got " + v);
      return v.asText();
    }
  }
}
