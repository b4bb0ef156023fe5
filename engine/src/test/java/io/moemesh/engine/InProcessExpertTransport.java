package io.moemesh.engine;

import io.moemesh.engine.experts.ExpertOutputs;
import io.moemesh.engine.experts.ExpertTransport;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.LocalExperts;
import io.moemesh.model.moe.ExpertDispatch;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntConsumer;

/**
 * Expert "services" as objects in this process, computed on the caller's thread: the dispatch arithmetic
 * without the network. Records every dispatch so tests can check where tokens went.
 */
final class InProcessExpertTransport implements ExpertTransport {
  record Sent(int shard, int layerId, long placementVersion, int tokens, int[] expertOffsets, DType hiddenType, long bytes) {}

  private final Kernels kernels;
  private final LocalExperts[] shards;
  private final LocalExperts shared;
  final List<Sent> sent = new ArrayList<>();
  /** Told the number of dispatches sent so far, before each new one. */
  volatile IntConsumer beforeDispatch = n -> {};
  /** Shards that answer every call with a failure, as a dead process's connection would. */
  final Set<Integer> dead = ConcurrentHashMap.newKeySet();
  /** Shards that never answer (a stopped process whose connection stays open): their calls stay pending. */
  final Set<Integer> hung = ConcurrentHashMap.newKeySet();
  /** The calls sent to hung shards, still pending unless the caller cancelled them. */
  final List<CompletableFuture<ExpertOutputs>> unanswered = new java.util.concurrent.CopyOnWriteArrayList<>();

  InProcessExpertTransport(Kernels kernels, LocalExperts[] shards, LocalExperts shared) {
    this.kernels = kernels;
    this.shards = shards;
    this.shared = shared;
  }

  @Override
  public int numShards() {
    return shards.length;
  }

  @Override
  public CompletableFuture<ExpertOutputs> routed(int shard, ExpertDispatch d) {
    beforeDispatch.accept(sent.size());
    if (dead.contains(shard)) return CompletableFuture.failedFuture(new IllegalStateException("UNAVAILABLE: connection refused"));
    if (hung.contains(shard)) {
      var never = new CompletableFuture<ExpertOutputs>();
      unanswered.add(never);
      return never;
    }
    long bytes = d.hidden().numElements() * d.hidden().dtype().byteSize() + (d.scales() == null ? 0 : d.scales().numElements() * 4);
    sent.add(new Sent(shard, d.layerId(), d.placementVersion(), d.hidden().dim(0), d.expertOffsets().clone(), d.hidden().dtype(), bytes));
    try (TensorArena scratch = TensorArena.confined()) {
      return CompletableFuture.completedFuture(outputs(shards[shard].compute(kernels, d, scratch)));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  @Override
  public CompletableFuture<ExpertOutputs> shared(int layerId, Tensor hidden, Tensor scales) {
    int tokens = hidden.dim(0), dim = hidden.dim(1);
    try (TensorArena scratch = TensorArena.confined()) {
      Tensor out = scratch.allocate(DType.F32, tokens, dim);
      if (scales != null) shared.sharedQuantized(kernels, layerId, out, hidden, scales, scratch);
      else shared.shared(kernels, layerId, out, hidden, scratch);
      Tensor wire = out;
      if (shared.outputDType() != DType.F32) {
        wire = scratch.allocate(shared.outputDType(), tokens, dim);
        kernels.convert(wire, out);
      }
      return CompletableFuture.completedFuture(outputs(wire));
    }
  }

  private static ExpertOutputs outputs(Tensor t) {
    ByteBuffer copy = ByteBuffer.allocate(Math.toIntExact(t.numElements() * t.dtype().byteSize()));
    copy.put(t.asReadOnlyBytes()).flip();
    return new ExpertOutputs(t.dtype(), t.dim(0), t.dim(1), copy);
  }
}
