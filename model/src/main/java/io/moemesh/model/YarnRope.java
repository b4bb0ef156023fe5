package io.moemesh.model;

import io.moemesh.kernels.RopeTable;
import io.moemesh.kernels.TensorArena;

/**
 * Rotary frequencies as DeepSeek's reference {@code precompute_freqs_cis} computes them, in float32 step by
 * step: {@code freq_i = 1 / theta^(2i/d)}; under YaRN (only when the context exceeds the original one) the
 * low frequencies are divided by {@code factor}, blended by a linear ramp between the correction dims of
 * {@code beta_fast} and {@code beta_slow}. Pairs are interleaved ({@code x[2i], x[2i+1]}), as the reference's
 * {@code view_as_complex}; Hugging Face permutes q/k and uses rotate_half, which is the same rotation.
 */
public final class YarnRope {
  private YarnRope() {}

  /** The per-pair frequencies (radians per position), length {@code qk_rope_head_dim / 2}. */
  public static float[] frequencies(ModelConfig c) {
    int dim = c.qkRopeHeadDim();
    float[] freqs = new float[dim / 2];
    for (int i = 0; i < freqs.length; i++) {
      float exponent = (float) (2 * i) / (float) dim;
      freqs[i] = 1.0f / (float) Math.pow(c.ropeTheta(), exponent);
    }
    if (!c.yarnActive()) return freqs;
    ModelConfig.Yarn y = c.ropeScaling();
    int original = y.originalMaxPositionEmbeddings();
    double low = Math.max(Math.floor(correctionDim(y.betaFast(), dim, c.ropeTheta(), original)), 0);
    double high = Math.min(Math.ceil(correctionDim(y.betaSlow(), dim, c.ropeTheta(), original)), dim - 1);
    float lowF = (float) low, span = (float) ((low == high ? high + 0.001 : high) - low);
    for (int i = 0; i < freqs.length; i++) {
      float ramp = Math.min(Math.max((i - lowF) / span, 0f), 1f);
      float smooth = 1f - ramp;
      freqs[i] = freqs[i] / y.factor() * (1f - smooth) + freqs[i] * smooth;
    }
    return freqs;
  }

  /** The table for positions {@code [0, max_position_embeddings)}. */
  public static RopeTable table(TensorArena arena, ModelConfig c) {
    return RopeTable.of(arena, frequencies(c), c.maxPositionEmbeddings());
  }

  private static double correctionDim(double rotations, int dim, double base, int maxSeqLen) {
    return dim * Math.log(maxSeqLen / (rotations * 2 * Math.PI)) / (2 * Math.log(base));
  }
}
