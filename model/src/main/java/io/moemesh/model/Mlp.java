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
 */
public record Mlp(Linear w1, Linear w2, Linear w3) {

  /** {@code out (n, dim) = mlp(x (n, dim))}. */
  public void apply(Kernels k, Tensor out, Tensor x, TensorArena scratch) {
    int n = Math.toIntExact(x.numRows()), inter = w1.outFeatures();
    Tensor gate = scratch.empty(DType.F32, n, inter); // both written whole by their projections
    Tensor up = scratch.empty(DType.F32, n, inter);
    w1.apply(k, gate, x, scratch);
    w3.apply(k, up, x, scratch);
    k.siluMul(gate, gate, up);
    w2.apply(k, out, gate, scratch);
  }

  public long bytes() {
    return w1.bytes() + w2.bytes() + w3.bytes();
  }
}
