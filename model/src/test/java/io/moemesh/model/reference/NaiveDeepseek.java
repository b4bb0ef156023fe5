package io.moemesh.model.reference;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.ModelConfig;
import io.moemesh.model.ModelConfigReader;
import io.moemesh.model.checkpoint.Checkpoint;
import io.moemesh.model.checkpoint.StDType;
import io.moemesh.model.checkpoint.TensorInfo;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * An independent, deliberately naive DeepSeek-V3 forward pass: float64, plain arrays, the whole sequence at once
 * from position 0, no cache, no kernels. Written from DeepSeek's reference {@code inference/model.py}
 * (deepseek-ai/DeepSeek-V3 at 9b4e978) with MLA in its unabsorbed ("naive") form, to check the engine against:
 * <pre>
 *   h = embed(tokens);  for each layer: h = h + attn(attn_norm(h));  h = h + ffn(ffn_norm(h))
 *   logits = lm_head(norm(h))
 * </pre>
 * It shares nothing with the engine but the checkpoint reader and {@link ModelConfig}. Every weight is held as
 * doubles (BF16 and F32 exactly, FP8 e4m3 decoded here and multiplied by its 128×128 block's
 * {@code weight_scale_inv}), so it suits test-sized models only.
 *
 * <p>Where the reference is itself float32 by construction — the rotary table, built from an explicitly
 * float32 {@code arange} — the frequencies and angles are rounded to float32 as it does; everything else is
 * float64.
 */
public final class NaiveDeepseek {
  private final ModelConfig c;
  private final Map<String, double[]> weights; // checkpoint name → values in row-major order
  private final float[] ropeFrequencies;       // (qk_rope_head_dim / 2), radians per position
  private final double softmaxScale;

  private NaiveDeepseek(ModelConfig c, Map<String, double[]> weights) {
    this.c = c;
    this.weights = weights;
    this.ropeFrequencies = ropeFrequencies(c);
    this.softmaxScale = softmaxScale(c);
  }

  /** Reads config.json and every tensor of the checkpoint in {@code dir}. */
  public static NaiveDeepseek load(Path dir) {
    ModelConfig c = ModelConfigReader.read(dir.resolve("config.json"));
    Map<String, double[]> weights = new HashMap<>();
    try (Checkpoint checkpoint = Checkpoint.open(dir)) {
      for (String name : checkpoint.names())
        if (!name.endsWith("_scale_inv")) weights.put(name, read(checkpoint, name, c));
    }
    return new NaiveDeepseek(c, weights);
  }

  /** The final-normed hidden states {@code (T, dim)} and the logits {@code (T, vocab)} of every position. */
  public record Output(double[][] hidden, double[][] logits) {}

  /** The main model over {@code tokens} at positions 0, 1, …: {@code Transformer.forward} for every row. */
  public Output forward(int[] tokens) {
    double[][] h = embed("model.embed_tokens.weight", tokens);
    for (int layer = 0; layer < c.numHiddenLayers(); layer++) h = block(layer, h);
    double[][] hidden = rmsNorm(h, "model.norm.weight");
    return new Output(hidden, linear(hidden, "lm_head.weight"));
  }

  /**
   * The first MTP module (DeepSeek-V3 §2.2; not in model.py — this follows vLLM/SGLang as the engine documents):
   * at position i, {@code h' = eh_proj([enorm(emb(next[i])); hnorm(hidden[i])])}, then the block at layer index
   * {@code num_hidden_layers}, then {@code shared_head.head(shared_head.norm(h'))}.
   */
  public double[][] forwardMtp(int[] nextTokens, double[][] hidden) {
    String p = "model.layers." + c.numHiddenLayers() + ".";
    String embedding = weights.containsKey(p + "embed_tokens.weight") ? p + "embed_tokens.weight" : "model.embed_tokens.weight";
    double[][] e = rmsNorm(embed(embedding, nextTokens), p + "enorm.weight");
    double[][] h = rmsNorm(hidden, p + "hnorm.weight");
    double[][] joined = new double[e.length][];
    for (int t = 0; t < e.length; t++) joined[t] = concat(e[t], h[t]);
    double[][] x = block(c.numHiddenLayers(), linear(joined, p + "eh_proj.weight"));
    return linear(rmsNorm(x, p + "shared_head.norm.weight"), p + "shared_head.head.weight");
  }

  // ---- the blocks -------------------------------------------------------------------------------------------

  private double[][] block(int layer, double[][] x) {
    String p = "model.layers." + layer + ".";
    x = add(x, attention(p + "self_attn.", rmsNorm(x, p + "input_layernorm.weight")));
    double[][] normed = rmsNorm(x, p + "post_attention_layernorm.weight");
    // Hugging Face's rule; model.py's "layer_id < n_dense_layers" is the same with moe_layer_freq 1.
    boolean moe = c.nRoutedExperts() > 0 && layer >= c.firstKDenseReplace() && layer % c.moeLayerFreq() == 0;
    return add(x, moe ? moe(p + "mlp.", normed) : mlp(p + "mlp.", normed));
  }

  /** MLA, unabsorbed: keys and values expanded per head from the latent c_kv; causal softmax attention. */
  private double[][] attention(String a, double[][] x) {
    int T = x.length, heads = c.numAttentionHeads(), nope = c.qkNopeHeadDim(), rope = c.qkRopeHeadDim();
    int qkDim = nope + rope, vDim = c.vHeadDim(), rank = c.kvLoraRank();
    double[][] q = c.qLoraRank() == 0 ? linear(x, a + "q_proj.weight")
        : linear(rmsNorm(linear(x, a + "q_a_proj.weight"), a + "q_a_layernorm.weight"), a + "q_b_proj.weight");
    double[][] kvA = linear(x, a + "kv_a_proj_with_mqa.weight"); // (T, rank + rope): c_kv ‖ k_pe
    double[][] cKv = new double[T][], kPe = new double[T][];
    for (int t = 0; t < T; t++) {
      cKv[t] = Arrays.copyOfRange(kvA[t], 0, rank);
      kPe[t] = rotate(Arrays.copyOfRange(kvA[t], rank, rank + rope), t);
    }
    double[][] kv = linear(rmsNorm(cKv, a + "kv_a_layernorm.weight"), a + "kv_b_proj.weight"); // (T, heads·(nope+v))
    double[][] o = new double[T][heads * vDim];
    for (int h = 0; h < heads; h++) {
      double[][] key = new double[T][], value = new double[T][];
      for (int t = 0; t < T; t++) {
        int at = h * (nope + vDim);
        key[t] = concat(Arrays.copyOfRange(kv[t], at, at + nope), kPe[t]);           // [k_nope ‖ k_pe]
        value[t] = Arrays.copyOfRange(kv[t], at + nope, at + nope + vDim);
      }
      for (int s = 0; s < T; s++) {
        double[] query = Arrays.copyOfRange(q[s], h * qkDim, (h + 1) * qkDim);
        double[] qPe = rotate(Arrays.copyOfRange(query, nope, qkDim), s);
        System.arraycopy(qPe, 0, query, nope, rope);
        double[] scores = new double[s + 1]; // causal: keys 0..s only
        for (int t = 0; t <= s; t++) scores[t] = dot(query, key[t]) * softmaxScale;
        double[] p = softmax(scores);
        for (int t = 0; t <= s; t++)
          for (int i = 0; i < vDim; i++) o[s][h * vDim + i] += p[t] * value[t][i];
      }
    }
    return linear(o, a + "o_proj.weight");
  }

  /** {@code w2(silu(w1 x) · w3 x)}: dense layers, routed and shared experts. */
  private double[][] mlp(String p, double[][] x) {
    double[][] gate = linear(x, p + "gate_proj.weight"), up = linear(x, p + "up_proj.weight");
    for (int t = 0; t < gate.length; t++)
      for (int i = 0; i < gate[t].length; i++) gate[t][i] = gate[t][i] / (1 + Math.exp(-gate[t][i])) * up[t][i];
    return linear(gate, p + "down_proj.weight");
  }

  /** The MoE: each token's routed experts weighted by the gate, plus the shared experts. */
  private double[][] moe(String m, double[][] x) {
    double[] bias = c.topkMethod() == io.moemesh.model.TopkMethod.NOAUX_TC ? weight(m + "gate.e_score_correction_bias") : null;
    double[][] logits = linear(x, m + "gate.weight");
    double[][] y = c.nSharedExperts() > 0 ? mlp(m + "shared_experts.", x) : new double[x.length][x[0].length];
    for (int t = 0; t < x.length; t++) {
      Route route = route(c, logits[t], bias);
      for (int i = 0; i < route.experts().length; i++) {
        double[] out = mlp(m + "experts." + route.experts()[i] + ".", new double[][] {x[t]})[0];
        for (int d = 0; d < out.length; d++) y[t][d] += route.weights()[i] * out[d];
      }
    }
    return y;
  }

  /** One token's routed experts, best first, and their weights. */
  record Route(int[] experts, double[] weights) {}

  /**
   * DeepSeek-V3's gate ({@code Gate.forward}): sigmoid scores; selection on scores + bias; with groups, a group's
   * score is the sum of its top-2 selection scores (its max without a bias), only the best {@code topk_group}
   * groups stay; the top-k experts of those; weights are their unbiased scores, normalized, times the route scale.
   */
  static Route route(ModelConfig c, double[] logits, double[] bias) {
    int E = logits.length, perGroup = E / c.nGroup();
    double[] score = new double[E], choice = new double[E];
    for (int e = 0; e < E; e++) {
      score[e] = 1 / (1 + Math.exp(-logits[e]));
      choice[e] = score[e] + (bias == null ? 0 : bias[e]);
    }
    if (c.nGroup() > 1) {
      double[] groupScore = new double[c.nGroup()];
      for (int g = 0; g < c.nGroup(); g++) {
        double[] members = Arrays.copyOfRange(choice, g * perGroup, (g + 1) * perGroup);
        int[] best = topK(members, Math.min(2, perGroup));
        groupScore[g] = bias == null || best.length == 1 ? members[best[0]] : members[best[0]] + members[best[1]];
      }
      boolean[] kept = new boolean[c.nGroup()];
      for (int g : topK(groupScore, c.topkGroup())) kept[g] = true;
      for (int e = 0; e < E; e++) if (!kept[e / perGroup]) choice[e] = Double.NEGATIVE_INFINITY;
    }
    int[] chosen = topK(choice, c.numExpertsPerTok());
    double[] weights = new double[chosen.length];
    double sum = 0;
    for (int i = 0; i < chosen.length; i++) sum += weights[i] = score[chosen[i]];
    for (int i = 0; i < chosen.length; i++) weights[i] = (c.normTopkProb() ? weights[i] / sum : weights[i]) * c.routedScalingFactor();
    return new Route(chosen, weights);
  }

  // ---- rotary embedding (precompute_freqs_cis, apply_rotary_emb) ---------------------------------------------

  /** As the reference: YaRN changes anything only when the context exceeds the original one. */
  private static boolean yarnActive(ModelConfig c) {
    return c.ropeScaling() != null && c.maxPositionEmbeddings() > c.ropeScaling().originalMaxPositionEmbeddings();
  }

  /** {@code qk_head_dim^-0.5}, times mscale² under YaRN: {@code mscale = 0.1 · mscale_all_dim · ln(factor) + 1}. */
  static double softmaxScale(ModelConfig c) {
    double scale = Math.pow(c.qkNopeHeadDim() + c.qkRopeHeadDim(), -0.5);
    if (!yarnActive(c)) return scale;
    double mscale = 0.1 * c.ropeScaling().mscaleAllDim() * Math.log(c.ropeScaling().factor()) + 1.0;
    return scale * mscale * mscale;
  }

  /** {@code 1 / θ^(2i/d)}; under YaRN blended towards {@code freq / factor} below the beta_fast…beta_slow ramp. */
  static float[] ropeFrequencies(ModelConfig c) {
    int dim = c.qkRopeHeadDim();
    double[] freqs = new double[dim / 2];
    for (int i = 0; i < freqs.length; i++) freqs[i] = 1.0 / Math.pow(c.ropeTheta(), (float) (2 * i) / dim);
    var y = c.ropeScaling();
    if (yarnActive(c)) {
      double logBase = 2 * Math.log(c.ropeTheta());
      int original = y.originalMaxPositionEmbeddings();
      int low = (int) Math.max(Math.floor(dim * Math.log(original / (y.betaFast() * 2 * Math.PI)) / logBase), 0);
      int high = (int) Math.min(Math.ceil(dim * Math.log(original / (y.betaSlow() * 2 * Math.PI)) / logBase), dim - 1);
      double width = low == high ? 0.001 : high - low;
      for (int i = 0; i < freqs.length; i++) {
        double smooth = 1 - Math.clamp((i - low) / width, 0.0, 1.0);
        freqs[i] = freqs[i] / y.factor() * (1 - smooth) + freqs[i] * smooth;
      }
    }
    float[] f32 = new float[freqs.length];
    for (int i = 0; i < f32.length; i++) f32[i] = (float) freqs[i];
    return f32;
  }

  /** Rotates interleaved pairs {@code (x[2i], x[2i+1])} by {@code pos · freq_i}, as a complex multiplication. */
  private double[] rotate(double[] x, int pos) {
    double[] out = new double[x.length];
    for (int i = 0; i < x.length / 2; i++) {
      float angle = pos * ropeFrequencies[i]; // torch.outer of int positions and float32 frequencies
      double cos = Math.cos(angle), sin = Math.sin(angle);
      out[2 * i] = x[2 * i] * cos - x[2 * i + 1] * sin;
      out[2 * i + 1] = x[2 * i] * sin + x[2 * i + 1] * cos;
    }
    return out;
  }

  // ---- arithmetic ------------------------------------------------------------------------------------------

  private double[][] embed(String name, int[] tokens) {
    double[] table = weight(name);
    int dim = c.hiddenSize();
    double[][] h = new double[tokens.length][];
    for (int t = 0; t < tokens.length; t++) h[t] = Arrays.copyOfRange(table, tokens[t] * dim, (tokens[t] + 1) * dim);
    return h;
  }

  /** {@code y = x · Wᵀ} for W {@code (out, in)} stored row-major. */
  private double[][] linear(double[][] x, String name) {
    double[] w = weight(name);
    int in = x[0].length, out = w.length / in;
    if ((long) out * in != w.length) throw new IllegalArgumentException(name + " does not take inputs of " + in);
    double[][] y = new double[x.length][out];
    for (int t = 0; t < x.length; t++)
      for (int o = 0; o < out; o++) {
        double sum = 0;
        for (int j = 0; j < in; j++) sum += x[t][j] * w[o * in + j];
        y[t][o] = sum;
      }
    return y;
  }

  private double[][] rmsNorm(double[][] x, String name) {
    double[] w = weight(name);
    double[][] y = new double[x.length][];
    for (int t = 0; t < x.length; t++) {
      double inv = 1 / Math.sqrt(dot(x[t], x[t]) / x[t].length + c.rmsNormEps());
      y[t] = new double[x[t].length];
      for (int i = 0; i < w.length; i++) y[t][i] = x[t][i] * inv * w[i];
    }
    return y;
  }

  private static double[] softmax(double[] s) {
    double max = Arrays.stream(s).max().orElseThrow(), sum = 0;
    double[] p = new double[s.length];
    for (int i = 0; i < s.length; i++) sum += p[i] = Math.exp(s[i] - max);
    for (int i = 0; i < s.length; i++) p[i] /= sum;
    return p;
  }

  /** Indices of the {@code k} largest values, largest first; ties go to the lower index. */
  static int[] topK(double[] v, int k) {
    Integer[] order = new Integer[v.length];
    for (int i = 0; i < v.length; i++) order[i] = i;
    Arrays.sort(order, (i, j) -> v[i] != v[j] ? Double.compare(v[j], v[i]) : Integer.compare(i, j));
    int[] out = new int[k];
    for (int i = 0; i < k; i++) out[i] = order[i];
    return out;
  }

  private static double[][] add(double[][] a, double[][] b) {
    double[][] y = new double[a.length][a[0].length];
    for (int t = 0; t < a.length; t++) for (int i = 0; i < a[t].length; i++) y[t][i] = a[t][i] + b[t][i];
    return y;
  }

  private static double dot(double[] a, double[] b) {
    double sum = 0;
    for (int i = 0; i < a.length; i++) sum += a[i] * b[i];
    return sum;
  }

  private static double[] concat(double[] a, double[] b) {
    double[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private double[] weight(String name) {
    double[] w = weights.get(name);
    if (w == null) throw new IllegalArgumentException("the checkpoint has no tensor " + name);
    return w;
  }

  // ---- reading the checkpoint -------------------------------------------------------------------------------

  private static double[] read(Checkpoint checkpoint, String name, ModelConfig c) {
    TensorInfo info = checkpoint.info(name);
    long[] shape = info.shape();
    int[] dims = new int[shape.length];
    for (int i = 0; i < dims.length; i++) dims[i] = Math.toIntExact(shape[i]);
    double[] out = new double[Math.toIntExact(info.numElements())];
    try (TensorArena arena = TensorArena.open()) {
      if (info.dtype() != StDType.F8_E4M3) {
        Tensor t = arena.allocate(DType.F32, dims);
        checkpoint.readInto(name, t); // BF16 and F16 widen exactly
        for (int i = 0; i < out.length; i++) out[i] = t.getFloat(i);
        return out;
      }
      // weight_dequant: w[i][j] · scale_inv[i / 128][j / 128]
      Tensor q = checkpoint.load(name, arena), scaleInv = checkpoint.load(name + "_scale_inv", arena);
      int cols = dims[1], blockRows = c.quantization().blockRows(), blockCols = c.quantization().blockCols();
      for (int i = 0; i < dims[0]; i++)
        for (int j = 0; j < cols; j++)
          out[i * cols + j] = e4m3(q.getByte((long) i * cols + j))
              * scaleInv.getFloat((long) (i / blockRows) * scaleInv.dim(1) + j / blockCols);
      return out;
    }
  }

  /** FP8 e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities, S.1111.111 is NaN. */
  public static double e4m3(byte b) {
    int exponent = (b >> 3) & 0xF, mantissa = b & 0x7;
    double sign = (b & 0x80) != 0 ? -1 : 1;
    if (exponent == 0xF && mantissa == 0x7) return Double.NaN;
    if (exponent == 0) return sign * mantissa / 8.0 * 0x1p-6;
    return sign * (1 + mantissa / 8.0) * Math.scalb(1.0, exponent - 7);
  }
}
