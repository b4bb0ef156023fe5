package io.moemesh.bench;

import io.moemesh.kernels.ProfilingKernels.Work;

/**
 * The least time this machine needs for some work: its bytes at the triad bandwidth, or its multiply-adds at the
 * measured INT8 and BF16 peaks, whichever is longer (an op can overlap its memory and its arithmetic, not beat
 * either). F32 multiply-adds have no peak here: decode does only a few (the router's logits), so they count as
 * bytes alone.
 *
 * @param bandwidthGBs triad bandwidth, GB/s
 * @param int8Gops INT8 peak, GOP/s (2 per multiply-add)
 * @param bf16Gops BF16 dot-product peak, GOP/s (2 per multiply-add)
 */
record SpeedOfLight(double bandwidthGBs, double int8Gops, double bf16Gops) {
  SpeedOfLight {
    if (!(bandwidthGBs > 0 && int8Gops > 0 && bf16Gops > 0))
      throw new IllegalArgumentException("bandwidth and peaks must be positive: " + bandwidthGBs + " GB/s, " + int8Gops
          + " and " + bf16Gops + " GOP/s");
  }

  double memorySeconds(Work w) {
    return w.bytes() / (bandwidthGBs * 1e9);
  }

  double arithmeticSeconds(Work w) {
    return 2.0 * w.int8Macs() / (int8Gops * 1e9) + 2.0 * w.bf16Macs() / (bf16Gops * 1e9);
  }

  double seconds(Work w) {
    return Math.max(memorySeconds(w), arithmeticSeconds(w));
  }

  /** What bounds the work: "memory" or the arithmetic ("int8", "bf16", or "int8+bf16" for a mix). */
  String limit(Work w) {
    if (memorySeconds(w) >= arithmeticSeconds(w)) return "memory";
    return w.int8Macs() == 0 ? "bf16" : w.bf16Macs() == 0 ? "int8" : "int8+bf16";
  }
}
