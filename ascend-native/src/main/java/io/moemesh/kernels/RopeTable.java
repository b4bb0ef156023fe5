package io.moemesh.kernels;

/**
 * Precomputed rotations for {@link Kernels#rope}: {@code cos[p][i] = cos(p · freq_i)}, {@code sin} likewise,
 * for positions {@code 0 ≤ p < maxPositions} and {@code i < ropeDim / 2}. The frequencies (YaRN-corrected or
 * plain) are the model's business; this is only the table.
 *
 * @param cos F32 (maxPositions, ropeDim / 2)
 * @param sin F32 (maxPositions, ropeDim / 2)
 */
public record RopeTable(Tensor cos, Tensor sin) {
  /**
   * Builds the table from per-pair frequencies (radians per position). The angle {@code p · freq} is an F32
   * product, as in DeepSeek's {@code precompute_freqs_cis} (float32 {@code torch.outer}).
   */
  public static RopeTable of(TensorArena arena, float[] freqs, int maxPositions) {
    Tensor cos = arena.allocate(DType.F32, maxPositions, freqs.length);
    Tensor sin = arena.allocate(DType.F32, maxPositions, freqs.length);
    for (int p = 0; p < maxPositions; p++) {
      for (int i = 0; i < freqs.length; i++) {
        float angle = p * freqs[i];
        cos.setFloat((long) p * freqs.length + i, (float) Math.cos(angle));
        sin.setFloat((long) p * freqs.length + i, (float) Math.sin(angle));
      }
    }
    return new RopeTable(cos, sin);
  }

  public int maxPositions() {
    return cos.dim(0);
  }

  public int ropeDim() {
    return 2 * cos.dim(1);
  }
}
