package io.moemesh.model.moe;

import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;

/**
 * Where a MoE layer's experts run: in this process ({@code io.moemesh.model.LocalExperts}) or, in the mesh, on expert
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

  /**
   * {@link #forward} in two halves, so the caller can compute something else (another micro-batch's attention)
   * while the experts work: the outputs are written by the time {@link Pending#finish()} returns, and are the
   * same bits as {@code forward}'s. Until then the caller keeps {@code routedOut}, {@code sharedOut}, {@code x}
   * and everything allocated in {@code scratch} since the call alive, and calls {@code finish()} exactly once,
   * on the thread that started it — also when its own work fails meanwhile, so no call is left in flight.
   *
   * <p>By default the experts are computed here, at the start, and {@code finish()} has nothing left to do: an
   * in-process backend computes with the same kernels (and cores) as attention, so there is nothing to hide its
   * time behind. A remote backend sends at the start and waits and combines at the finish.
   */
  default Pending start(Kernels k, int layerId, Tensor routedOut, Tensor sharedOut, Tensor x, Routing routing, TensorArena scratch) {
    forward(k, layerId, routedOut, sharedOut, x, routing, scratch);
    return Pending.DONE;
  }

  /** Experts at work for one MoE layer of one (micro-)batch; see {@link #start}. */
  @FunctionalInterface
  interface Pending {
    /** Nothing left to wait for. */
    Pending DONE = () -> {};

    /** Waits for the experts and writes their outputs; throws, as {@link #forward} would, if they failed. */
    void finish();
  }
}
