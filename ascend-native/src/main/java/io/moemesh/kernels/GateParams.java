package io.moemesh.kernels;

/**
 * The routing rule of one MoE gate, in DeepSeek-V3 config names: {@code nGroup} groups of experts, the best
 * {@code topkGroup} groups kept, {@code topk} experts per token ({@code num_experts_per_tok}).
 */
public record GateParams(int topk, int nGroup, int topkGroup, boolean normTopkProb, float routedScalingFactor) {
  public GateParams {
    if (topk < 1 || nGroup < 1 || topkGroup < 1 || topkGroup > nGroup)
      throw new IllegalArgumentException("invalid gate: topk=" + topk + " nGroup=" + nGroup + " topkGroup=" + topkGroup);
  }
}
