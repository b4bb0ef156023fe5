package io.moemesh.model.demo;

import io.moemesh.model.ModelConfig;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * A router that prefers a few experts, as trained routers do: {@code S} is added to the
 * {@code e_score_correction_bias} of {@code n_routed_experts / 8} hot experts (at least one) in each gate,
 * drawn per gate from (seed, tensor name), so each layer has its own hot experts.
 *
 * <p>Why the bias: with {@code topk_method = noaux_tc} it enters the selection only (group scores and top-k),
 * never the weights, which stay the unbiased sigmoid scores — the skew changes which experts run, not how a
 * chosen expert's output is scaled. Scaling gate rows would also sharpen every weight. Sigmoid scores lie in
 * (0, 1), so {@code S ≈ 1} sends nearly every token to a hot expert (and its group: on the tiny model, half the
 * routed tokens go to the hot expert and none to the other group); {@code S} of 0.1–0.25 tilts the load as a
 * real router does (tiny model: the hot expert gets 1.5–2.5× its even share).
 */
public final class RouterSkew {
  private RouterSkew() {}

  /** The hot experts of gate {@code biasName} ({@code model.layers.L.mlp.gate.e_score_correction_bias}), ascending. */
  public static int[] hotExperts(int numExperts, long seed, String biasName) {
    int[] experts = new int[numExperts];
    for (int e = 0; e < numExperts; e++) experts[e] = e;
    var rng = new SplittableRandom(seed * 0x632BE59BD9B4E019L ^ biasName.hashCode());
    int hot = Math.max(1, numExperts / 8);
    for (int i = 0; i < hot; i++) { // the first `hot` steps of a Fisher–Yates shuffle
      int j = rng.nextInt(i, numExperts), t = experts[i];
      experts[i] = experts[j];
      experts[j] = t;
    }
    int[] chosen = Arrays.copyOf(experts, hot);
    Arrays.sort(chosen);
    return chosen;
  }

  static void check(float skew, ModelConfig config) {
    if (!(skew >= 0) || Float.isInfinite(skew)) throw new IllegalArgumentException("router skew must be a finite number ≥ 0, got " + skew);
    if (skew > 0 && !config.hasCorrectionBias())
      throw new IllegalArgumentException("router skew biases e_score_correction_bias, which needs topk_method noaux_tc");
  }

  static void apply(float[] bias, float skew, long seed, String biasName) {
    for (int e : hotExperts(bias.length, seed, biasName)) bias[e] += skew;
  }
}
