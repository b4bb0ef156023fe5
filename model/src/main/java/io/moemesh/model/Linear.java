package io.moemesh.model;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;

/**
 * A weight matrix {@code (out, in)} applied as {@code y = x · Wᵀ}: F32 or BF16 weights through
 * {@link Kernels#matmul}, or A8W8 — INT8 weights with per-output-channel scales, activations quantized per
 * token on the fly — through {@link Kernels#matmulInt8}.
 *
 * <p>With {@code bf16Activations} (BF16 weights in the {@code bf16} and {@code int8} precisions) the activations
 * are rounded to BF16 first, as DeepSeek's reference runs them, and the product is a BF16 × BF16 dot product
 * (exact products, F32 sums: twice the F32 rate on AVX512-BF16). {@code exact} keeps F32 activations.
 *
 * @param weight F32, BF16 or I8 (out, in)
 * @param scales F32 (out) for I8 weights, else null
 */
public record Linear(Tensor weight, Tensor scales, boolean bf16Activations) {
  public Linear {
    if ((weight.dtype() == DType.I8) != (scales != null))
      throw new IllegalArgumentException("INT8 weights need scales, and only they: " + weight);
    if (bf16Activations && weight.dtype() != DType.BF16)
      throw new IllegalArgumentException("BF16 activations need BF16 weights: " + weight);
  }

  public Linear(Tensor weight, Tensor scales) {
    this(weight, scales, false);
  }

  /** F32 or BF16 weights, with BF16 activations when {@code precision} is not {@code exact} and the weights are BF16. */
  public static Linear of(Tensor weight, Precision precision) {
    return new Linear(weight, null, precision != Precision.EXACT && weight.dtype() == DType.BF16);
  }

  public int inFeatures() {
    return weight.dim(1);
  }

  public int outFeatures() {
    return weight.dim(0);
  }

  /** {@code out (n, outFeatures) = x (n, inFeatures) · Wᵀ}; scratch for INT8 activations comes from {@code scratch}. */
  public void apply(Kernels k, Tensor out, Tensor x, TensorArena scratch) {
    if (scales == null && bf16Activations) {
      Tensor xb = scratch.empty(DType.BF16, Math.toIntExact(x.numRows()), inFeatures());
      k.convert(xb, x);
      k.matmul(out, xb, weight);
      return;
    }
    if (scales == null) {
      k.matmul(out, x, weight);
      return;
    }
    int n = Math.toIntExact(x.numRows());
    Tensor xq = scratch.empty(DType.I8, n, inFeatures());
    Tensor xs = scratch.empty(DType.F32, n);
    k.quantizeRows(xq, xs, x);
    k.matmulInt8(out, xq, xs, weight, scales);
  }

  /** {@code out = x · Wᵀ} for activations already quantized per row ({@code xq} I8 (n, in), {@code xs} F32 (n)); INT8 weights only. */
  public void applyInt8(Kernels k, Tensor out, Tensor xq, Tensor xs) {
    if (scales == null) throw new IllegalStateException("applyInt8 needs INT8 weights, these are " + weight.dtype());
    k.matmulInt8(out, xq, xs, weight, scales);
  }

  /**
   * The first {@code n} output rows only, sharing this matrix's memory: {@code y[:, :n]} for a pass that reads
   * {@code n / outFeatures} of the weights (a draft head over the most frequent tokens).
   */
  public Linear firstOutputs(int n) {
    if (n < 1 || n > outFeatures()) throw new IllegalArgumentException(n + " output rows of " + outFeatures());
    return n == outFeatures() ? this : new Linear(weight.rows(0, n), scales == null ? null : scales.rows(0, n), bf16Activations);
  }

  public boolean isInt8() {
    return scales != null;
  }

  /** Bytes of weight (and scale) data: what one pass over this matrix reads. */
  public long bytes() {
    return weight.numElements() * weight.dtype().byteSize() + (scales == null ? 0 : scales.numElements() * 4);
  }
}
