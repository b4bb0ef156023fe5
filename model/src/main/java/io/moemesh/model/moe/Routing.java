package io.moemesh.model.moe;

import io.moemesh.kernels.Tensor;

/**
 * Where a batch's tokens go: the gate's (token, expert, weight) choices regrouped expert by expert, experts in
 * ascending id order and, within an expert, tokens in ascending row order. Combining in this order adds a
 * token's expert outputs in ascending expert id — the order of DeepSeek's reference loop — whoever computes them.
 *
 * @param expertOffsets (numExperts + 1): expert e's assignments are {@code [expertOffsets[e], expertOffsets[e+1])}
 * @param tokenRows row of each assignment
 * @param weights gate weight of each assignment
 */
public record Routing(int[] expertOffsets, int[] tokenRows, float[] weights) {

  /** Regroups the gate output {@code expertIds, gateWeights (tokens, topk)}. */
  public static Routing of(Tensor expertIds, Tensor gateWeights, int numExperts) {
    int topk = expertIds.dim(1);
    int[] offsets = new int[numExperts + 1];
    int[] ids = expertIds.toIntArray();
    float[] gate = gateWeights.toFloatArray();
    for (int id : ids) offsets[id + 1]++;
    for (int e = 0; e < numExperts; e++) offsets[e + 1] += offsets[e];
    int[] next = offsets.clone();
    int[] rows = new int[ids.length];
    float[] weights = new float[ids.length];
    for (int i = 0; i < ids.length; i++) { // i runs over tokens in order, so rows stay ascending per expert
      int at = next[ids[i]]++;
      rows[at] = i / topk;
      weights[at] = gate[i];
    }
    return new Routing(offsets, rows, weights);
  }

  public int numExperts() {
    return expertOffsets.length - 1;
  }

  /** Tokens routed to expert {@code e}. */
  public int count(int e) {
    return expertOffsets[e + 1] - expertOffsets[e];
  }
}
