package io.moemesh.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class ModelConfigReaderTest {
  static final ObjectMapper JSON = new ObjectMapper();

  /** Hugging Face's config.json of deepseek-ai/DeepSeek-V3, as released. */
  static final String DEEPSEEK_V3 = """
      {"architectures": ["DeepseekV3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
       "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config",
                    "AutoModel": "modeling_deepseek.DeepseekV3Model",
                    "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM"},
       "aux_loss_alpha": 0.001, "bos_token_id": 0, "eos_token_id": 1, "ep_size": 1, "first_k_dense_replace": 3,
       "hidden_act": "silu", "hidden_size": 7168, "initializer_range": 0.02, "intermediate_size": 18432,
       "kv_lora_rank": 512, "max_position_embeddings": 163840, "model_type": "deepseek_v3",
       "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256,
       "n_shared_experts": 1, "norm_topk_prob": true, "num_attention_heads": 128, "num_experts_per_tok": 8,
       "num_hidden_layers": 61, "num_key_value_heads": 128, "num_nextn_predict_layers": 1, "pretraining_tp": 1,
       "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
       "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                               "weight_block_size": [128, 128]},
       "rms_norm_eps": 1e-06,
       "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                        "original_max_position_embeddings": 4096, "type": "yarn"},
       "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "seq_aux": true,
       "tie_word_embeddings": false, "topk_group": 4, "topk_method": "noaux_tc", "torch_dtype": "bfloat16",
       "transformers_version": "4.33.1", "use_cache": true, "v_head_dim": 128, "vocab_size": 129280}
      """;

  static ObjectNode shipped(String name) {
    try (var in = ModelConfigReaderTest.class.getResourceAsStream("/io/moemesh/model/configs/" + name + ".json")) {
      return (ObjectNode) JSON.readTree(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static ModelConfig parse(JsonNode json) {
    return ModelConfigReader.parse(json, "config.json");
  }

  /** {@code qk_head_dim^-0.5 · (0.1 · ln(factor) + 1)²}, mscale_all_dim being 1 in every config here. */
  static double yarnScale(int qkHeadDim, double factor) {
    double mscale = 0.1 * Math.log(factor) + 1;
    return mscale * mscale / Math.sqrt(qkHeadDim);
  }

  @Nested
  class ShippedConfigs {
    @Test
    void tiny() {
      ModelConfig c = parse(shipped("tiny"));
      assertThat(c.hiddenSize()).isEqualTo(128);
      assertThat(c.vocabSize()).isEqualTo(1024);
      assertThat(c.qkHeadDim()).isEqualTo(24);
      assertThat(c.latentDim()).isEqualTo(32 + 8);
      assertThat(c.yarnActive()).isTrue();
      assertThat(c.softmaxScale()).isCloseTo((float) yarnScale(24, 2), within(1e-7f));
      assertThat(IntStream.rangeClosed(0, 3).mapToObj(c::isMoeLayer)).containsExactly(false, true, true, true); // 3 = MTP
      assertThat(c.hasCorrectionBias()).isTrue();
      assertThat(c.nGroup()).isEqualTo(2);
      assertThat(c.topkGroup()).isEqualTo(1);
      assertThat(c.routedScalingFactor()).isEqualTo(2.5f);
      assertThat(c.numNextnPredictLayers()).isEqualTo(1);
      assertThat(c.quantization()).isNull();
      assertThat(c.eosTokenIds()).containsExactly(1);
    }

    @Test
    void small() {
      ModelConfig c = parse(shipped("small"));
      assertThat(c.qkHeadDim()).isEqualTo(64);
      assertThat(c.latentDim()).isEqualTo(128 + 32);
      assertThat(c.softmaxScale()).isCloseTo((float) yarnScale(64, 4), within(1e-7f));
      assertThat(c.isMoeLayer(0)).isFalse();
      assertThat(IntStream.rangeClosed(1, 8).allMatch(c::isMoeLayer)).isTrue();
      assertThat(c.numExpertsPerTok()).isEqualTo(4);
      assertThat(c.ropeScaling()).isEqualTo(new ModelConfig.Yarn(4f, 2048, 32f, 1f, 1f, 1f));
    }

    @Test
    void bench() {
      ModelConfig c = parse(shipped("bench"));
      assertThat(c.qkHeadDim()).isEqualTo(96);
      assertThat(c.latentDim()).isEqualTo(256 + 32);
      assertThat(c.softmaxScale()).isCloseTo((float) yarnScale(96, 4), within(1e-7f));
      assertThat(c.isMoeLayer(0)).isFalse();
      assertThat(IntStream.rangeClosed(1, 16).allMatch(c::isMoeLayer)).isTrue();
      assertThat(c.nRoutedExperts()).isEqualTo(64);
    }

    @Test
    void readsAFile(@TempDir Path dir) throws IOException {
      Path file = Files.writeString(dir.resolve("config.json"), shipped("tiny").toString());
      assertThat(ModelConfigReader.read(file)).usingRecursiveComparison().isEqualTo(parse(shipped("tiny")));
    }
  }

  @Nested
  class DeepSeekV3 {
    final ModelConfig c = parse(readTree(DEEPSEEK_V3));

    @Test
    void parsesItsReleasedConfig() {
      assertThat(c.hiddenSize()).isEqualTo(7168);
      assertThat(c.qLoraRank()).isEqualTo(1536);
      assertThat(c.qkHeadDim()).isEqualTo(192);
      assertThat(c.latentDim()).isEqualTo(576);
      assertThat(c.nGroup()).isEqualTo(8);
      assertThat(c.topkGroup()).isEqualTo(4);
      assertThat(c.quantization()).isEqualTo(new ModelConfig.Fp8Quantization(128, 128));
      assertThat(c.ropeScaling()).isEqualTo(new ModelConfig.Yarn(40f, 4096, 32f, 1f, 1f, 1f));
    }

    @Test
    void softmaxScaleIsTheYarnOne() {
      // 192^-0.5 · (0.1 · ln 40 + 1)² = 0.0721688 · 1.8738534 = 0.1352337
      assertThat(c.softmaxScale()).isCloseTo((float) yarnScale(192, 40), within(1e-7f));
      assertThat((double) c.softmaxScale()).isCloseTo(0.1352337, within(1e-6));
    }

    @Test
    void theFirstThreeLayersAreDenseAndTheMtpLayerIsMoe() {
      assertThat(IntStream.range(0, 3).noneMatch(c::isMoeLayer)).isTrue();
      assertThat(IntStream.rangeClosed(3, 61).allMatch(c::isMoeLayer)).isTrue();
    }
  }

  @Nested
  class Accepted {
    @Test
    void aNullQLoraRankMeansAPlainQProj() {
      assertThat(parse(edited("tiny", "q_lora_rank", "null")).qLoraRank()).isZero();
      assertThat(parse(edited("tiny", "q_lora_rank", null)).qLoraRank()).isZero();
    }

    @Test
    void yarnIsInactiveWithinTheOriginalContext() {
      ModelConfig c = parse(edited("tiny", "max_position_embeddings", "128"));
      assertThat(c.yarnActive()).isFalse();
      assertThat(c.softmaxScale()).isCloseTo((float) (1 / Math.sqrt(24)), within(1e-7f));
    }

    @Test
    void withoutRopeScalingTheScaleIsPlain() {
      ModelConfig c = parse(edited("tiny", "rope_scaling", "null"));
      assertThat(c.ropeScaling()).isNull();
      assertThat(c.softmaxScale()).isCloseTo((float) (1 / Math.sqrt(24)), within(1e-7f));
    }

    @Test
    void eosTokenIdMayBeAList() {
      assertThat(parse(edited("tiny", "eos_token_id", "[1, 7]")).eosTokenIds()).containsExactly(1, 7);
    }
  }

  @Nested
  class Rejected {
    static Stream<Arguments> unsupportedValues() {
      return Stream.of(
          Arguments.of("hidden_act", "\"gelu\"", "hidden_act"),
          Arguments.of("tie_word_embeddings", "true", "tie_word_embeddings"),
          Arguments.of("scoring_func", "\"softmax\"", "scoring_func"),
          Arguments.of("topk_method", "\"random\"", "topk_method"),
          Arguments.of("rope_scaling.type", "\"linear\"", "rope_scaling.type"),
          Arguments.of("quantization_config", "{\"quant_method\": \"bitsandbytes\"}", "quantization_config.quant_method"),
          Arguments.of("quantization_config", "{\"quant_method\": \"fp8\"}", "quantization_config.weight_block_size"),
          Arguments.of("n_group", "3", "n_group"),
          Arguments.of("topk_group", "3", "topk_group"),
          Arguments.of("num_experts_per_tok", "5", "num_experts_per_tok"),
          Arguments.of("num_key_value_heads", "1", "num_key_value_heads"),
          Arguments.of("qk_rope_head_dim", "7", "qk_rope_head_dim"),
          Arguments.of("model_type", "\"llama\"", "model_type"),
          Arguments.of("attention_bias", "true", "attention_bias"),
          Arguments.of("hidden_size", null, "hidden_size"),
          Arguments.of("vocab_size", "0", "vocab_size"),
          Arguments.of("num_nextn_predict_layers", "-1", "num_nextn_predict_layers"),
          Arguments.of("q_lora_rank", "-4", "q_lora_rank"),
          Arguments.of("moe_layer_freq", "0", "moe_layer_freq"),
          Arguments.of("rope_scaling.mscale", "0.707", "rope_scaling.mscale"));
    }

    @ParameterizedTest(name = "{0} = {1}")
    @MethodSource("unsupportedValues")
    void anUnsupportedValueIsAnErrorNamingTheField(String field, String value, String named) {
      assertThatThrownBy(() -> parse(edited("tiny", field, value)))
          .isInstanceOf(ModelConfigException.class).hasMessageContaining(named + ":");
    }

    static Stream<Arguments> wrongJsonTypes() {
      return Stream.of(
          Arguments.of("hidden_size", "\"128\"", "hidden_size"),
          Arguments.of("hidden_size", "128.5", "hidden_size"),
          Arguments.of("num_hidden_layers", "[3]", "num_hidden_layers"),
          Arguments.of("norm_topk_prob", "\"yes\"", "norm_topk_prob"),
          Arguments.of("rope_theta", "\"big\"", "rope_theta"),
          Arguments.of("hidden_act", "1", "hidden_act"),
          Arguments.of("routed_scaling_factor", "{}", "routed_scaling_factor"),
          Arguments.of("rope_scaling.factor", "\"2\"", "factor"),
          Arguments.of("eos_token_id", "[\"x\"]", "eos_token_id"));
    }

    @ParameterizedTest(name = "{0} = {1}")
    @MethodSource("wrongJsonTypes")
    void aValueOfTheWrongJsonTypeIsAnErrorNamingTheField(String field, String value, String named) {
      assertThatThrownBy(() -> parse(edited("tiny", field, value)))
          .isInstanceOf(ModelConfigException.class).hasMessageContaining(named + ":");
    }

    @Test
    void aFileThatIsNotAJsonObjectIsAnError(@TempDir Path dir) throws IOException {
      Path file = Files.writeString(dir.resolve("config.json"), "[1, 2]");
      assertThatThrownBy(() -> ModelConfigReader.read(file)).isInstanceOf(ModelConfigException.class)
          .hasMessageContaining(file.toString()).hasMessageContaining("not a JSON object");
      assertThatThrownBy(() -> ModelConfigReader.read(dir.resolve("missing.json"))).isInstanceOf(ModelConfigException.class)
          .hasMessageContaining("missing.json").hasMessageContaining("cannot read");
    }
  }

  /** Shipped config {@code name} with {@code field} (dotted for nested) set to the JSON {@code value}, or removed when null. */
  static ObjectNode edited(String name, String field, String value) {
    ObjectNode root = shipped(name), node = root;
    String[] path = field.split("\\.");
    for (int i = 0; i < path.length - 1; i++) node = (ObjectNode) node.get(path[i]);
    String last = path[path.length - 1];
    if (value == null) node.remove(last);
    else node.set(last, readTree(value));
    return root;
  }

  static JsonNode readTree(String json) {
    try {
      return JSON.readTree(json);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
