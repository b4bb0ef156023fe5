package io.moemesh.model;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.GateParams;
import io.moemesh.kernels.HeadsKmPairs;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.moe.ExpertSelection;
import io.moemesh.model.moe.MoeLayer;
import java.util.Map;

/** Builds the layers of a {@link DeepseekModel} from checkpoint tensors named as DeepSeek-V3's Hugging Face checkpoint. */
final class ModelLoader {
  private final ModelConfig c;
  private final WeightLoader w;
  private final Precision precision;
  private final ExpertSelection selection;

  ModelLoader(ModelConfig c, WeightLoader w, Precision precision, ExpertSelection selection) {
    this.c = c;
    this.w = w;
    this.precision = precision;
    this.selection = selection;
  }

  /**
   * Layer {@code i}'s block; {@code cacheLayer} is its index in the KV cache. Routed and shared experts go to
   * the maps (keyed by {@code i}) that the in-process expert backend serves.
   */
  DecoderLayer block(int i, int cacheLayer, Map<Integer, Mlp[]> routed, Map<Integer, Mlp> shared) {
    String p = "model.layers." + i + ".";
    Tensor attnNorm = w.f32(p + "input_layernorm.weight", c.hiddenSize());
    Tensor ffnNorm = w.f32(p + "post_attention_layernorm.weight", c.hiddenSize());
    Mla attention = attention(p + "self_attn.", cacheLayer);
    if (!c.isMoeLayer(i))
      return new DecoderLayer(attnNorm, attention, ffnNorm, mlp(p + "mlp.", c.intermediateSize()), null);
    String m = p + "mlp.";
    int experts = c.nRoutedExperts();
    Tensor gate = w.matrix(m + "gate.weight", experts, c.hiddenSize());
    Tensor bias = c.hasCorrectionBias() ? w.f32(m + "gate.e_score_correction_bias", experts) : null;
    experts(i, routed, shared);
    var params = new GateParams(c.numExpertsPerTok(), c.nGroup(), c.topkGroup(), c.normTopkProb(), c.routedScalingFactor());
    return new DecoderLayer(attnNorm, attention, ffnNorm, null, new MoeLayer(i, gate, bias, params, c.nSharedExperts() > 0));
  }

  /** Layer {@code i}'s routed experts (those selected; null elsewhere) and shared experts (if selected) into the maps. */
  void experts(int i, Map<Integer, Mlp[]> routed, Map<Integer, Mlp> shared) {
    String m = "model.layers." + i + ".mlp.";
    Mlp[] layerExperts = new Mlp[c.nRoutedExperts()];
    for (int e = 0; e < layerExperts.length; e++)
      if (selection.routed(i, e)) layerExperts[e] = mlp(m + "experts." + e + ".", c.moeIntermediateSize());
    routed.put(i, layerExperts);
    if (c.nSharedExperts() > 0 && selection.shared(i))
      shared.put(i, mlp(m + "shared_experts.", c.nSharedExperts() * c.moeIntermediateSize()));
  }

  private Mlp mlp(String prefix, int inter) {
    Linear[] gateUp = w.quantizedStack(new String[] {prefix + "gate_proj", prefix + "up_proj"}, new int[] {inter, inter}, c.hiddenSize());
    Linear down = w.linear(prefix + "down_proj", c.hiddenSize(), inter, true);
    if (gateUp != null) return new Mlp(gateUp[1], down, gateUp[2], gateUp[0]);
    return new Mlp(w.linear(prefix + "gate_proj", inter, c.hiddenSize(), true), down,
        w.linear(prefix + "up_proj", inter, c.hiddenSize(), true));
  }

  private Mla attention(String p, int cacheLayer) {
    int heads = c.numAttentionHeads(), qk = c.qkHeadDim(), nope = c.qkNopeHeadDim(), v = c.vHeadDim();
    int rank = c.kvLoraRank(), dim = c.hiddenSize();
    Linear wq = null, wqA = null, wqB = null, wqkvA = null, wkvA;
    Tensor qNorm = null;
    if (c.qLoraRank() == 0) {
      wq = w.linear(p + "q_proj", heads * qk, dim, true);
      wkvA = w.linear(p + "kv_a_proj_with_mqa", rank + c.qkRopeHeadDim(), dim, true);
    } else {
      // q's and kv's down-projections read the same x: stacked into one matrix when quantized
      Linear[] stack = w.quantizedStack(new String[] {p + "q_a_proj", p + "kv_a_proj_with_mqa"},
          new int[] {c.qLoraRank(), rank + c.qkRopeHeadDim()}, dim);
      if (stack != null) {
        wqkvA = stack[0];
        wqA = stack[1];
        wkvA = stack[2];
      } else {
        wqA = w.linear(p + "q_a_proj", c.qLoraRank(), dim, true);
        wkvA = w.linear(p + "kv_a_proj_with_mqa", rank + c.qkRopeHeadDim(), dim, true);
      }
      qNorm = w.f32(p + "q_a_layernorm.weight", c.qLoraRank());
      wqB = w.linear(p + "q_b_proj", heads * qk, c.qLoraRank(), true);
    }
    Tensor kvNorm = w.f32(p + "kv_a_layernorm.weight", rank);
    Tensor kvB = w.matrix(p + "kv_b_proj.weight", heads * (nope + v), rank); // (heads * (nope + v), rank)
    Linear wkvB = precision == Precision.INT8 ? w.quantize(kvB) : Linear.of(kvB, precision); // naive form; absorbed below
    // each head's rows of W_KV_B: its nope rows are W_UK (nope, rank), its v rows W_UV (v, rank), both as they lie;
    // W_UK as its column pairs for a BF16 query (laid out once here, not on every call)
    boolean pairUk = Mla.queryDType(precision) == DType.BF16 && kvB.dtype() == DType.BF16;
    Tensor wUk, wUv = w.allocate(kvB.dtype(), heads, v, rank);
    try (TensorArena temp = TensorArena.confined()) {
      Tensor asItLies = pairUk ? temp.allocate(kvB.dtype(), heads, nope, rank) : w.allocate(kvB.dtype(), heads, nope, rank);
      for (int h = 0; h < heads; h++) {
        int first = h * (nope + v);
        asItLies.rows(h, h + 1).reshape(nope, rank).copyFrom(kvB.rows(first, first + nope));
        wUv.rows(h, h + 1).reshape(v, rank).copyFrom(kvB.rows(first + nope, first + nope + v));
      }
      wUk = asItLies;
      if (pairUk) {
        wUk = w.allocate(DType.BF16, HeadsKmPairs.shape(heads, nope, rank));
        HeadsKmPairs.fill(wUk, asItLies);
      }
    }
    Linear wo = w.linear(p + "o_proj", dim, heads * v, true);
    return new Mla(c, cacheLayer, wq, wqA, qNorm, wqB, wkvA, wqkvA, kvNorm, wkvB, wUk, wUv, wo, Mla.queryDType(precision));
  }

  Tensor embedding(String name) {
    return w.matrix(name, c.vocabSize(), c.hiddenSize());
  }

  Tensor norm(String name) {
    return w.f32(name, c.hiddenSize());
  }

  Linear head(String name) {
    return Linear.of(w.matrix(name, c.vocabSize(), c.hiddenSize()), precision);
  }

  /**
   * The MTP module at layer index {@code i} (≥ num_hidden_layers). Its embedding and head are the main model's
   * {@code mainEmbedding} and {@code mainHead} when the checkpoint holds none or byte-for-byte copies of them (as
   * DeepSeek-V3 stores them, shared in training): one copy in memory, and on a small model the MTP pass finds the head
   * still in cache from the main model's.
   */
  MtpLayer mtp(int i, int cacheLayer, Tensor mainEmbedding, Linear mainHead, Map<Integer, Mlp[]> routed, Map<Integer, Mlp> shared) {
    String p = "model.layers." + i + ".";
    String embedName = p + "embed_tokens.weight", headName = p + "shared_head.head.weight";
    Tensor embed = !w.contains(embedName) || w.isCopyOf(embedName, "model.embed_tokens.weight") ? mainEmbedding : embedding(embedName);
    Linear ehProj = Linear.of(w.matrix(p + "eh_proj.weight", c.hiddenSize(), 2 * c.hiddenSize()), precision);
    Linear head = w.isCopyOf(headName, "lm_head.weight") ? mainHead : head(headName);
    return new MtpLayer(embed, norm(p + "enorm.weight"), norm(p + "hnorm.weight"), ehProj,
        block(i, cacheLayer, routed, shared), norm(p + "shared_head.norm.weight"), head);
  }

}
