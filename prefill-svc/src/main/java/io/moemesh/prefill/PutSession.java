package io.moemesh.prefill;

import io.grpc.Context;
import io.grpc.stub.StreamObserver;
import io.moemesh.enginehost.telemetry.KvTransfer;
import io.moemesh.proto.common.v1.DType;
import io.moemesh.proto.common.v1.Tensor;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.kvstore.v1.LayerRows;
import io.moemesh.proto.kvstore.v1.PutEnd;
import io.moemesh.proto.kvstore.v1.PutFrame;
import io.moemesh.proto.kvstore.v1.PutOutcome;
import io.moemesh.proto.kvstore.v1.PutResponse;
import io.moemesh.proto.kvstore.v1.PutRevoke;
import io.moemesh.proto.kvstore.v1.PutStart;
import io.moemesh.proto.tensor.WireTensors;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * One prompt's object on its way into kv-store: PutStart at once, a LayerRows frame per layer per chunk as
 * the engine computes it, then PutEnd (commit) or PutRevoke. Rows resent after a preemption are skipped.
 * The {@link KvTransfer} counts the bytes sent and learns how the put ended.
 */
final class PutSession implements StreamObserver<PutResponse> {
  private final StreamObserver<PutFrame> frames;
  private final CompletableFuture<PutResponse> result = new CompletableFuture<>();
  private final DType dtype;
  private final int latentDim, rowBytes;
  private final int[] sentUpTo; // per layer: rows [0, sentUpTo) are on their way
  private final KvTransfer transfer;
  private boolean closed;

  /**
   * Opens the put stream outside the caller's gRPC context: the object's fate is decided here (commit or an
   * explicit revoke), not by a Prefill call ending. A prefill process that dies leaves an idle put, which
   * kv-store revokes.
   */
  PutSession(KvStoreGrpc.KvStoreStub store, PutStart start, DType dtype, int bytesPerValue, KvTransfer transfer) {
    this.transfer = transfer;
    result.whenComplete((response, failure) -> {
      if (failure != null) transfer.failed(failure);
      else if (response.getOutcome() == PutOutcome.PUT_OUTCOME_COMMITTED) transfer.succeeded();
      else transfer.revoked();
    });
    Context previous = Context.ROOT.attach();
    try {
      this.frames = store.put(this);
    } finally {
      Context.ROOT.detach(previous);
    }
    this.dtype = dtype;
    this.latentDim = start.getLayout().getLatentDim();
    this.rowBytes = latentDim * bytesPerValue;
    this.sentUpTo = new int[start.getLayout().getNumLayers()];
    frames.onNext(PutFrame.newBuilder().setStart(start).build());
  }

  /** Sends rows {@code [start, start + n)} of a layer, minus any already sent. Called on the engine's step thread. */
  synchronized void layer(int layerId, int start, byte[] rows) {
    int n = rows.length / rowBytes, skip = Math.max(0, sentUpTo[layerId] - start);
    if (closed || skip >= n) return;
    Tensor tensor = WireTensors.write(dtype, ByteBuffer.wrap(rows, skip * rowBytes, (n - skip) * rowBytes), n - skip, latentDim);
    frames.onNext(PutFrame.newBuilder().setLayer(LayerRows.newBuilder().setLayerId(layerId).setTokenStart(start + skip).setRows(tensor)).build());
    sentUpTo[layerId] = Math.max(sentUpTo[layerId], start + n);
    transfer.bytes((long) (n - skip) * rowBytes);
  }

  /** Commits the object; completes with the store's answer (its lease expiry). */
  synchronized CompletableFuture<PutResponse> commit() {
    if (!closed) {
      closed = true;
      frames.onNext(PutFrame.newBuilder().setEnd(PutEnd.getDefaultInstance()).build());
      frames.onCompleted();
    }
    return result;
  }

  synchronized void revoke(String reason) {
    if (closed) return;
    closed = true;
    frames.onNext(PutFrame.newBuilder().setRevoke(PutRevoke.newBuilder().setReason(reason)).build());
    frames.onCompleted();
  }

  @Override
  public void onNext(PutResponse response) {
    result.complete(response);
  }

  @Override
  public void onError(Throwable t) {
    result.completeExceptionally(t);
  }

  @Override
  public void onCompleted() {
    result.completeExceptionally(new IllegalStateException("kv-store closed the put without an answer"));
  }
}
