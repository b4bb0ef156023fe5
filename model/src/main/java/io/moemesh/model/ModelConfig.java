package io.moemesh.model;

import java.util.OptionalInt;

/**
 * A DeepSeek-V3-architecture model's hyper-parameters, named as in Hugging Face {@code config.json}
 * ({@code model_type: deepseek_v3}); {@link ModelConfigReader} parses and validates one. Behaviour is keyed on
 * these fields, never on sizes. In DeepSeek's {@code ModelArgs} terms: dim = hiddenSize, inter_dim =
 * intermediateSize, moe_inter_dim = moeIntermediateSize, n_dense_layers = firstKDenseReplace,
 * n_activated_experts = numExpertsPerTok, n_expert_groups = nGroup, n_limited_groups = topkGroup,
 * route_scale = routedScalingFactor.
 *
 * @param qLoraRank 0 when queries use a plain {@code q_proj} (V2-Lite style) instead of the low-rank path
 * @param topkMethod how the gate selects experts ({@code noaux_tc}: DeepSeek-V3's sigmoid + correction bias)
 * @param ropeScaling YaRN parameters, or null for plain RoPE
 * @param quantization the checkpoint's FP8 block quantization, or null for unquantized weights
 */
public record ModelConfig(
    int vocabSize,
    int hiddenSize,
    int intermediateSize,
    int moeIntermediateSize,
    int numHiddenLayers,
    int numAttentionHeads,
    int qLoraRank,
    int kvLoraRank,
    int qkNopeHeadDim,
    int qkRopeHeadDim,
    int vHeadDim,
    int nRoutedExperts,
    int nSharedExperts,
    int numExpertsPerTok,
    int nGroup,
    int topkGroup,
    TopkMethod topkMethod,
    boolean normTopkProb,
    float routedScalingFactor,
    int firstKDenseReplace,
    int moeLayerFreq,
    int numNextnPredictLayers,
    int maxPositionEmbeddings,
    float rmsNormEps,
    float ropeTheta,
    Yarn ropeScaling,
    Fp8Quantization quantization,
    int bosTokenId,
    int[] eosTokenIds) {

  /** YaRN context extension ({@code rope_scaling} with {@code type: yarn}). */
  public record Yarn(float factor, int originalMaxPositionEmbeddings, float betaFast, float betaSlow, float mscale,
      float mscaleAllDim) {}

  /** DeepSeek-V3's FP8 checkpoints: e4m3 weights, one F32 {@code weight_scale_inv} per block. */
  public record Fp8Quantization(int blockRows, int blockCols) {}

  /** Dimension of one head's query/key: the no-position part plus the rotary part. */
  public int qkHeadDim() {
    return qkNopeHeadDim + qkRopeHeadDim;
  }

  /** Values per token and layer in the latent KV cache: {@code c_kv ‖ k_pe}. */
  public int latentDim() {
    return kvLoraRank + qkRopeHeadDim;
  }

  /** Whether layer {@code layerId} (0-based; MTP layers follow the main ones) has an MoE feed-forward, else a dense MLP. */
  public boolean isMoeLayer(int layerId) {
    return nRoutedExperts > 0 && layerId >= firstKDenseReplace && layerId % moeLayerFreq == 0;
  }

  /** Whether the gate adds {@code e_score_correction_bias} for selection. */
  public boolean hasCorrectionBias() {
    return topkMethod == TopkMethod.NOAUX_TC;
  }

  /** Whether YaRN changes the frequencies: as DeepSeek's reference, only past the original context. */
  public boolean yarnActive() {
    return ropeScaling != null && maxPositionEmbeddings > ropeScaling.originalMaxPositionEmbeddings();
  }

  /**
   * The attention softmax scale: {@code qk_head_dim^-0.5}, times mscale² under YaRN with
   * {@code mscale = 0.1 · mscale_all_dim · ln(factor) + 1} (Hugging Face's {@code yarn_get_mscale}; DeepSeek's
   * reference uses {@code mscale}, equal to {@code mscale_all_dim} in every released config).
   */
  public float softmaxScale() {
    double scale = Math.pow(qkHeadDim(), -0.5);
    if (yarnActive() && ropeScaling.mscaleAllDim() != 0 && ropeScaling.factor() > 1) {
      double m = 0.1 * ropeScaling.mscaleAllDim() * Math.log(ropeScaling.factor()) + 1.0;
      scale = scale * m * m;
    }
    return (float) scale;
  }

  public boolean isEos(int tokenId) {
    for (int id : eosTokenIds) if (id == tokenId) return true;
    return false;
  }

  public OptionalInt firstEos() {
    return eosTokenIds.length == 0 ? OptionalInt.empty() : OptionalInt.of(eosTokenIds[0]);
  }
}
