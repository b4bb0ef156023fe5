package io.moemesh.model.moe;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Tensor;

/**
 * The work one routed-expert shard does for one MoE layer of one step: each token's hidden state once —
 * INT8 with a per-token scale for A8W8 experts (quantized once, before sending: low-bit dispatch), else F32 —
 * and the assignments grouped by expert in ascending id, tokens ascending within an expert (routing order
 * restricted to this shard). Assignment {@code i} runs token {@code tokenIndex[i]}; expert {@code e}'s
 * assignments are {@code [expertOffsets[e], expertOffsets[e+1])}.
 *
 * @param hidden (tokens, dim) I8 or F32
 * @param scales (tokens) F32 for I8 hidden states, else null
 * @param expertOffsets (numExperts + 1)
 * @param tokenIndex (assignments) rows of {@code hidden}
 */
public record ExpertDispatch(int layerId, long placementVersion, Tensor hidden, Tensor scales, int[] expertOffsets, int[] tokenIndex) {
  public ExpertDispatch {
    if (hidden.rank() != 2) throw new IllegalArgumentException("hidden states must be (tokens, dim), got " + hidden);
    if (hidden.dtype() == DType.I8 ? scales == null || scales.numElements() != hidden.dim(0) : hidden.dtype() != DType.F32 || scales != null)
      throw new IllegalArgumentException("hidden states must be I8 with one F32 scale per token, or F32 without scales: " + hidden + ", " + scales);
    if (expertOffsets.length < 2 || expertOffsets[0] != 0 || expertOffsets[expertOffsets.length - 1] != tokenIndex.length)
      throw new IllegalArgumentException("expert offsets must run from 0 to the " + tokenIndex.length + " assignments");
    for (int e = 0; e + 1 < expertOffsets.length; e++)
      if (expertOffsets[e + 1] < expertOffsets[e]) throw new IllegalArgumentException("expert offsets decrease at expert " + e);
    for (int t : tokenIndex)
      if (t < 0 || t >= hidden.dim(0)) throw new IllegalArgumentException("token index " + t + " outside the " + hidden.dim(0) + " tokens sent");
  }

  public int numAssignments() {
    return tokenIndex.length;
  }

  public int numExperts() {
    return expertOffsets.length - 1;
  }

  /** Tokens of each expert, for load statistics. */
  public int count(int expert) {
    return expertOffsets[expert + 1] - expertOffsets[expert];
  }

  /**
   * The expert offsets as they travel: only the experts with assignments here. A frame reaches one shard, which
   * holds a few of the experts, so the dense form ({@code numExperts + 1} offsets) would outweigh a one-token
   * frame's routing.
   *
   * @param experts the experts with assignments, ascending
   * @param ends    expert {@code experts[g]}'s assignments end at {@code ends[g]} (and start at {@code ends[g - 1]}, or 0)
   */
  public record Groups(int[] experts, int[] ends) {
    /** The experts with assignments in {@code expertOffsets}. */
    public static Groups of(int[] expertOffsets) {
      int n = 0;
      for (int e = 0; e + 1 < expertOffsets.length; e++) if (expertOffsets[e + 1] > expertOffsets[e]) n++;
      int[] experts = new int[n], ends = new int[n];
      for (int e = 0, g = 0; e + 1 < expertOffsets.length; e++) {
        if (expertOffsets[e + 1] == expertOffsets[e]) continue;
        experts[g] = e;
        ends[g++] = expertOffsets[e + 1];
      }
      return new Groups(experts, ends);
    }

    /** The dense offsets over {@code numExperts}; bad groups are an IllegalArgumentException saying what is wrong. */
    public int[] expertOffsets(int numExperts) {
      if (experts.length != ends.length) throw new IllegalArgumentException(experts.length + " experts but " + ends.length + " group ends");
      int[] offsets = new int[numExperts + 1];
      int next = 0, end = 0;
      for (int g = 0; g < experts.length; g++) {
        int e = experts[g];
        if (e < next || e >= numExperts) throw new IllegalArgumentException("expert " + e + " is out of order or outside the " + numExperts + " experts");
        if (ends[g] <= end) throw new IllegalArgumentException("expert " + e + "'s assignments end at " + ends[g] + ", not after " + end);
        for (; next <= e; next++) offsets[next] = end;
        end = ends[g];
      }
      for (; next <= numExperts; next++) offsets[next] = end;
      return offsets;
    }
  }
}
