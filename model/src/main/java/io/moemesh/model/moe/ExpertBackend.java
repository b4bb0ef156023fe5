package io.moemesh.model.moe;

import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;

/**
 * Where a MoE layer's experts run: in this process ({@link LocalExperts}) or, in the mesh, on expert
 * services. The math of the layer does not change with the backend.
 */
public interface ExpertBackend {

  /**
   * Adds the routed experts' weighted outputs to {@code out (tokens, dim)}: for each assignment in
   * {@link Routing} order, {@code out[row] += weight · expert(x[row])}.
   */
  void routed(Kernels k, int layerId, Tensor out, Tensor x, Routing routing, TensorArena scratch);

  /** Writes the shared experts' output for {@code x (tokens, dim)} into {@code out (tokens, dim)}. */
  void shared(Kernels k, int layerId, Tensor out, Tensor x, TensorArena scratch);

  /**
   * Both parts of a MoE layer's experts: {@link #routed} into {@code routedOut} (zeroed by the caller) and, when
   * {@code sharedOut} is not null, {@link #shared} into it. A remote backend overrides this to run the two at once.
   */
  default void forward(Kernels k, int layerId, Tensor routedOut, Tensor sharedOut, Tensor x, Routing routing, TensorArena scratch) {
    routed(k, layerId, routedOut, x, routing, scratch);
    if (sharedOut != null) shared(k, layerId, sharedOut, x, scratch);
  }
}
