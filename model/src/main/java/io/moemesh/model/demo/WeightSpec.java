package io.moemesh.model.demo;

import io.moemesh.model.ModelConfig;
import java.util.ArrayList;
import java.util.List;

/**
 * Every tensor of a DeepSeek-V3 checkpoint for a config, with its shape and how a random one is drawn:
 * names exactly as DeepSeek-V3's Hugging Face checkpoint (MTP layers at index {@code num_hidden_layers}).
 *
 * @param kind what the tensor is, which sets its scale and whether FP8 checkpoints quantize it
 */
record WeightSpec(String name, int[] shape, Kind kind) {

  enum Kind {
    /** Token embeddings: unit variance (the first norm rescales anyway). */
    EMBEDDING,
    /** RMSNorm weights: ones with a little noise. */
    NORM,
    /** A projection read by the next op: variance 1 / fan_in keeps activations O(1). FP8 in FP8 checkpoints. */
    PROJECTION,
    /** A projection into the residual stream, scaled down by √(2 · layers) so the stream grows gently. FP8 too. */
    OUTPUT_PROJECTION,
    /** The router: variance 1 / fan_in, so sigmoid scores spread and every expert gets tokens. */
    GATE,
    /** e_score_correction_bias: small, F32 as DeepSeek ships it. */
    GATE_BIAS,
    /** lm_head / shared_head.head: a little sharper than 1 / fan_in so greedy choices are clear. */
    HEAD,
    /** MTP's eh_proj: BF16 in DeepSeek-V3's FP8 checkpoint. */
    MIXING
  }

  boolean quantizedInFp8() {
    return kind == Kind.PROJECTION || kind == Kind.OUTPUT_PROJECTION;
  }

  static List<WeightSpec> all(ModelConfig c) {
    List<WeightSpec> specs = new ArrayList<>();
    int dim = c.hiddenSize(), vocab = c.vocabSize();
    specs.add(new WeightSpec("model.embed_tokens.weight", new int[] {vocab, dim}, Kind.EMBEDDING));
    for (int i = 0; i < c.numHiddenLayers() + c.numNextnPredictLayers(); i++) {
      String p = "model.layers." + i + ".";
      if (i >= c.numHiddenLayers()) {
        specs.add(new WeightSpec(p + "embed_tokens.weight", new int[] {vocab, dim}, Kind.EMBEDDING));
        specs.add(new WeightSpec(p + "enorm.weight", new int[] {dim}, Kind.NORM));
        specs.add(new WeightSpec(p + "hnorm.weight", new int[] {dim}, Kind.NORM));
        specs.add(new WeightSpec(p + "eh_proj.weight", new int[] {dim, 2 * dim}, Kind.MIXING));
      }
      block(specs, c, i, p);
      if (i >= c.numHiddenLayers()) {
        specs.add(new WeightSpec(p + "shared_head.norm.weight", new int[] {dim}, Kind.NORM));
        specs.add(new WeightSpec(p + "shared_head.head.weight", new int[] {vocab, dim}, Kind.HEAD));
      }
    }
    specs.add(new WeightSpec("model.norm.weight", new int[] {dim}, Kind.NORM));
    specs.add(new WeightSpec("lm_head.weight", new int[] {vocab, dim}, Kind.HEAD));
    return specs;
  }

  private static void block(List<WeightSpec> specs, ModelConfig c, int i, String p) {
    int dim = c.hiddenSize(), heads = c.numAttentionHeads(), rank = c.kvLoraRank();
    String a = p + "self_attn.";
    specs.add(new WeightSpec(p + "input_layernorm.weight", new int[] {dim}, Kind.NORM));
    if (c.qLoraRank() == 0) {
      specs.add(new WeightSpec(a + "q_proj.weight", new int[] {heads * c.qkHeadDim(), dim}, Kind.PROJECTION));
    } else {
      specs.add(new WeightSpec(a + "q_a_proj.weight", new int[] {c.qLoraRank(), dim}, Kind.PROJECTION));
      specs.add(new WeightSpec(a + "q_a_layernorm.weight", new int[] {c.qLoraRank()}, Kind.NORM));
      specs.add(new WeightSpec(a + "q_b_proj.weight", new int[] {heads * c.qkHeadDim(), c.qLoraRank()}, Kind.PROJECTION));
    }
    specs.add(new WeightSpec(a + "kv_a_proj_with_mqa.weight", new int[] {rank + c.qkRopeHeadDim(), dim}, Kind.PROJECTION));
    specs.add(new WeightSpec(a + "kv_a_layernorm.weight", new int[] {rank}, Kind.NORM));
    specs.add(new WeightSpec(a + "kv_b_proj.weight", new int[] {heads * (c.qkNopeHeadDim() + c.vHeadDim()), rank}, Kind.PROJECTION));
    specs.add(new WeightSpec(a + "o_proj.weight", new int[] {dim, heads * c.vHeadDim()}, Kind.OUTPUT_PROJECTION));
    specs.add(new WeightSpec(p + "post_attention_layernorm.weight", new int[] {dim}, Kind.NORM));
    String m = p + "mlp.";
    if (!c.isMoeLayer(i)) {
      mlp(specs, m, dim, c.intermediateSize());
      return;
    }
    specs.add(new WeightSpec(m + "gate.weight", new int[] {c.nRoutedExperts(), dim}, Kind.GATE));
    if (c.hasCorrectionBias()) specs.add(new WeightSpec(m + "gate.e_score_correction_bias", new int[] {c.nRoutedExperts()}, Kind.GATE_BIAS));
    for (int e = 0; e < c.nRoutedExperts(); e++) mlp(specs, m + "experts." + e + ".", dim, c.moeIntermediateSize());
    if (c.nSharedExperts() > 0) mlp(specs, m + "shared_experts.", dim, c.nSharedExperts() * c.moeIntermediateSize());
  }

  private static void mlp(List<WeightSpec> specs, String p, int dim, int inter) {
    specs.add(new WeightSpec(p + "gate_proj.weight", new int[] {inter, dim}, Kind.PROJECTION));
    specs.add(new WeightSpec(p + "up_proj.weight", new int[] {inter, dim}, Kind.PROJECTION));
    specs.add(new WeightSpec(p + "down_proj.weight", new int[] {dim, inter}, Kind.OUTPUT_PROJECTION));
  }

  long numElements() {
    long n = 1;
    for (int d : shape) n *= d;
    return n;
  }
}
