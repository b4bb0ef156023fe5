package io.moemesh.kernels;

import java.util.Arrays;

/**
 * The MoE gate of {@link ReferenceKernels#moeGate}, one token at a time: sigmoid scores, group-limited
 * top-k selection steered by the bias, weights from the unbiased scores. Ties go to the lower group, then to
 * the lower expert id.
 */
final class ReferenceGate {
  private ReferenceGate() {}

  record Route(int[] expertIds, float[] weights) {}

  /**
   * DeepSeek-V3's {@code Gate.forward} for one token, sigmoid scoring:
   * <pre>
   * scores = σ(logits)                       original = scores (the weights come from these)
   * selection = scores + bias                (bias only steers the choice)
   * groups: score = top-2 sum of selection (without a bias: the group's max, as DeepSeek's reference);
   *         keep the best topkGroup groups (ties: lower group first)
   * ids = top-k of selection over the kept experts, descending (ties: lower expert id first)
   * weights = original[ids] (/ their sum, if normTopkProb, summed in selection order) · routedScalingFactor
   * </pre>
   */
  static Route route(float[] logits, float[] bias, GateParams p) {
    int experts = logits.length;
    float[] scores = new float[experts];
    float[] selection = new float[experts];
    for (int e = 0; e < experts; e++) {
      scores[e] = 1f / (1f + (float) Math.exp(-logits[e]));
      selection[e] = bias == null ? scores[e] : scores[e] + bias[e];
    }
    boolean[] candidate = keptGroups(selection, bias != null, p);
    int[] ids = new int[p.topk()];
    for (int k = 0; k < ids.length; k++) {
      ids[k] = argmax(selection, candidate);
      candidate[ids[k]] = false;
    }
    float[] weights = new float[ids.length];
    for (int k = 0; k < ids.length; k++) weights[k] = scores[ids[k]];
    if (p.normTopkProb()) {
      float sum = 0f;
      for (float w : weights) sum += w;
      for (int k = 0; k < weights.length; k++) weights[k] = weights[k] / sum;
    }
    for (int k = 0; k < weights.length; k++) weights[k] = weights[k] * p.routedScalingFactor();
    return new Route(ids, weights);
  }

  /**
   * Which experts stay selectable: all of them, or those of the topkGroup best groups, a group scored by the
   * sum of its two best selection scores ({@code topTwo}) or by its best one.
   */
  private static boolean[] keptGroups(float[] selection, boolean topTwo, GateParams p) {
    boolean[] kept = new boolean[selection.length];
    int perGroup = selection.length / p.nGroup();
    if (p.nGroup() == 1) {
      Arrays.fill(kept, true);
      return kept;
    }
    float[] groupScores = new float[p.nGroup()];
    for (int g = 0; g < p.nGroup(); g++) {
      float first = Float.NEGATIVE_INFINITY;
      float second = Float.NEGATIVE_INFINITY;
      for (int e = g * perGroup; e < (g + 1) * perGroup; e++) {
        if (selection[e] > first) {
          second = first;
          first = selection[e];
        } else if (selection[e] > second) {
          second = selection[e];
        }
      }
      groupScores[g] = topTwo ? first + second : first;
    }
    boolean[] open = new boolean[p.nGroup()];
    Arrays.fill(open, true);
    for (int i = 0; i < p.topkGroup(); i++) {
      int g = argmax(groupScores, open);
      open[g] = false;
      Arrays.fill(kept, g * perGroup, (g + 1) * perGroup, true);
    }
    return kept;
  }

  /** Index of the largest {@code values[i]} with {@code allowed[i]}; on ties the lowest index. */
  private static int argmax(float[] values, boolean[] allowed) {
    int best = -1;
    for (int i = 0; i < values.length; i++) {
      if (allowed[i] && (best < 0 || values[i] > values[best])) best = i;
    }
    return best;
  }
}
