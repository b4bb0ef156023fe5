package io.moemesh.model;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;

/**
 * The SwiGLU feed-forward of dense layers, routed experts and shared experts: {@code w2(silu(w1(x)) · w3(x))}
 * ({@code gate_proj}, {@code down_proj}, {@code up_proj} in Hugging Face names).
 *
 * @param w1 (inter, dim)
 * @param w2 (dim, inter)
 * @param w3 (inter, dim)
 * @param w13 (2·inter, dim): w1's rows then w3's, one matrix of which w1 and w3 are views, so gate and up run as one
 *     call; null when they are apart (A8W8 only: there each output row's product is exact, so stacking changes no bit)
 */
public record Mlp(Linear w1, Linear w2, Linear w3, Linear w13) {
  public Mlp {
    if (w13 != null && (w13.outFeatures() != 2 * w1.outFeatures() || !w13.isInt8()))
      throw new IllegalArgumentException("w13 must stack two INT8 projections of " + w1.outFeatures() + " rows, got " + w13.weight());
  }

  public Mlp(Linear w1, Linear w2, Linear w3) {
    this(w1, w2, w3, null);
  }

  /** {@code out (n, dim) = mlp(x (n, dim))}. */
  public void apply(Kernels k, Tensor out, Tensor x, TensorArena scratch) {
    int n = Math.toIntExact(x.numRows()), inter = w1.outFeatures();
    Tensor gateUp = scratch.empty(DType.F32, n, 2 * inter); // written whole by the projections
    if (w13 != null) w13.apply(k, gateUp, x, scratch);
    else {
      w1.apply(k, gateUp.cols(0, inter), x, scratch);
      w3.apply(k, gateUp.cols(inter, 2 * inter), x, scratch);
    }
    down(k, out, gateUp, inter, scratch);
  }

  /**
   * {@code out = w2(silu(gate) · up)} from w13's output {@code gateUp (n, 2·inter)}: gate then up in each row. An INT8
   * w2 gets its input quantized as the product is made (one pass, the bits of siluMul then quantizeRows).
   */
  public void down(Kernels k, Tensor out, Tensor gateUp, int inter, TensorArena scratch) {
    Tensor gate = gateUp.cols(0, inter), up = gateUp.cols(inter, 2 * inter);
    if (w2.isInt8()) {
      int n = Math.toIntExact(gateUp.numRows());
      Tensor hq = scratch.empty(DType.I8, n, inter), hs = scratch.empty(DType.F32, n);
      k.siluMulQuantize(hq, hs, gate, up);
      w2.applyInt8(k, out, hq, hs);
      return;
    }
    k.siluMul(gate, gate, up);
    w2.apply(k, out, gate, scratch);
  }

  public long bytes() {
    return w1.bytes() + w2.bytes() + w3.bytes();
  }
}
