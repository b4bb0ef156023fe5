package io.moemesh.model;

import io.moemesh.kernels.DType;

/**
 * How weights, activations and the KV cache are held. Activations are F32 between ops; only INT8 rounds some of
 * them on the way into an op (below).
 * <ul>
 *   <li>{@code EXACT}: weights as stored (BF16 used as is — its upcast is exact — FP8 dequantized to F32),
 *       F32 KV cache: the mode that must match DeepSeek's reference run in float32.
 *   <li>{@code BF16}: BF16 weights (FP8 dequantized to BF16), BF16 KV cache.
 *   <li>{@code INT8}: A8W8 — per-output-channel INT8 attention projections and experts, per-token INT8
 *       activations — with a BF16 KV cache ("A8W8C16", the serving default), and the absorbed decode attention
 *       in BF16 as FlashMLA runs it (q_nope · W_UK, the scores, the softmax weights on the values and o · W_UV
 *       take BF16 operands, summed in F32). Embeddings, norms, the gate and the head stay BF16/F32.
 * </ul>
 */
public enum Precision {
  EXACT(DType.F32),
  BF16(DType.BF16),
  INT8(DType.BF16);

  private final DType kvCache;

  Precision(DType kvCache) {
    this.kvCache = kvCache;
  }

  public DType kvCacheDType() {
    return kvCache;
  }

  public static Precision parse(String value) {
    for (Precision p : values()) if (p.name().equalsIgnoreCase(value.trim())) return p;
    throw new IllegalArgumentException("precision must be exact, bf16 or int8, got '" + value + "'");
  }
}
