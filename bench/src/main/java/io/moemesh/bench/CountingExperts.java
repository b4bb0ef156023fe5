package io.moemesh.bench;

import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.LocalExperts;
import io.moemesh.model.moe.ExpertBackend;
import io.moemesh.model.moe.Routing;

/**
 * The in-process experts, counting the bytes of distinct routed experts each step's tokens pick: the
 * expert part of a step's weight traffic, which grows with the batch until every expert is read.
 */
final class CountingExperts implements ExpertBackend {
  private final LocalExperts experts;
  private long routedBytes;

  CountingExperts(LocalExperts experts) {
    this.experts = experts;
  }

  @Override
  public void routed(Kernels k, int layerId, Tensor out, Tensor x, Routing routing, TensorArena scratch) {
    int distinct = 0;
    for (int e = 0; e < routing.numExperts(); e++) if (routing.count(e) > 0) distinct++;
    routedBytes += distinct * experts.routedExpertBytes(layerId);
    experts.routed(k, layerId, out, x, routing, scratch);
  }

  @Override
  public void shared(Kernels k, int layerId, Tensor out, Tensor x, TensorArena scratch) {
    experts.shared(k, layerId, out, x, scratch);
  }

  /** Routed-expert bytes read since the last call. */
  long takeRoutedBytes() {
    long b = routedBytes;
    routedBytes = 0;
    return b;
  }
}
