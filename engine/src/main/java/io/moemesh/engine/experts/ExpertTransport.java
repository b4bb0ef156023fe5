package io.moemesh.engine.experts;

import io.moemesh.kernels.Tensor;
import io.moemesh.model.moe.ExpertDispatch;
import java.util.concurrent.CompletableFuture;

/**
 * How a model reaches expert services (a port: gRPC streams in the mesh, direct calls in tests). Both calls
 * copy what they send before returning, so the caller may reuse its tensors at once; the futures complete on
 * the transport's threads, exceptionally with a message naming the shard when a call fails.
 */
public interface ExpertTransport extends AutoCloseable {

  /** Shards the routed experts are spread over. */
  int numShards();

  /** Runs {@code dispatch} on routed shard {@code shard}: one output row per assignment, in dispatch order. */
  CompletableFuture<ExpertOutputs> routed(int shard, ExpertDispatch dispatch);

  /**
   * Runs the shared experts of {@code layerId} on {@code hidden (tokens, dim)} (I8 with per-token {@code scales}
   * for A8W8, else F32 and null): one output row per token.
   */
  CompletableFuture<ExpertOutputs> shared(int layerId, Tensor hidden, Tensor scales);

  @Override
  default void close() {}
}
