package io.moemesh.enginehost.kv;

import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.moemesh.engine.KvConnector.KvSink;
import io.moemesh.engine.KvLoadResult;
import io.moemesh.enginehost.telemetry.KvTransfer;
import io.moemesh.enginehost.telemetry.KvTransferMetrics.FailureReason;
import io.moemesh.enginehost.wire.WireDTypes;
import io.moemesh.proto.common.v1.Tensor;
import io.moemesh.proto.kvstore.v1.GetRequest;
import io.moemesh.proto.kvstore.v1.GetResponse;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.tensor.WireTensors;
import java.util.function.Consumer;

/**
 * One Get of a kv-store object into an engine's reserved pages — the whole prompt (decode) or a stored prefix
 * (prefill): checks the object's layout and each frame against the engine's cache, writes each frame as it
 * arrives, checks at the end that every layer's every position came, and reports exactly once to {@code done}
 * ({@link KvLoadResult#LOADED} or why not), after recording the outcome on the transfer. An object may hold more layers
 * than the sink takes — the MTP layer a speculating prefill stores after the main model's, of no use to a request
 * that does not speculate — whose frames are skipped.
 */
public final class StoreLoad implements ClientResponseObserver<GetRequest, GetResponse> {
  private final String key;
  private final String store;
  private final int numTokens;
  private final KvSink sink;
  private final KvTransfer traced;
  private final Consumer<ClientCallStreamObserver<GetRequest>> onStart;
  private final Consumer<KvLoadResult> done;
  private final long[] rowsPerLayer;
  private volatile String failure;

  private StoreLoad(String key, String store, int numTokens, KvSink sink, KvTransfer traced,
      Consumer<ClientCallStreamObserver<GetRequest>> onStart, Consumer<KvLoadResult> done) {
    this.key = key;
    this.store = store;
    this.numTokens = numTokens;
    this.sink = sink;
    this.traced = traced;
    this.onStart = onStart;
    this.done = done;
    this.rowsPerLayer = new long[sink.numLayers()];
  }

  /**
   * Starts the Get of positions {@code [0, numTokens)} of object {@code key}: the whole object when {@code whole}
   * (it must hold exactly that many), else a prefix read.
   *
   * @param onStart receives the call before it starts, so the caller can cancel it (a cancel reports to {@code done})
   */
  public static void start(KvStoreGrpc.KvStoreStub stub, String key, String store, boolean whole, int numTokens, KvSink sink,
      KvTransfer traced, Consumer<ClientCallStreamObserver<GetRequest>> onStart, Consumer<KvLoadResult> done) {
    var request = GetRequest.newBuilder().setKey(key).setPrefixTokens(whole ? 0 : numTokens).build();
    stub.withInterceptors(traced.tracing()).get(request, new StoreLoad(key, store, numTokens, sink, traced, onStart, done));
  }

  @Override
  public void beforeStart(ClientCallStreamObserver<GetRequest> call) {
    onStart.accept(call);
  }

  @Override
  public void onNext(GetResponse frame) {
    if (failure != null) return;
    try {
      if (frame.hasInfo()) {
        var layout = frame.getInfo().getLayout();
        if (layout.getNumLayers() < sink.numLayers() || layout.getLatentDim() != sink.latentDim()
            || layout.getNumTokens() < numTokens || layout.getDtype() != WireDTypes.wire(sink.dtype()))
          throw new IllegalArgumentException("object " + key + " has layout " + layout.toString().replace('\n', ' ')
              + " but this engine needs " + sink.numLayers() + " layers × " + numTokens + " tokens × " + sink.latentDim() + " " + sink.dtype());
      } else if (frame.hasLayer()) {
        var layer = frame.getLayer();
        Tensor wire = layer.getRows();
        traced.bytes(wire.getData().size());
        if (layer.getLayerId() >= sink.numLayers()) return; // a layer this request does not take
        String what = "layer " + layer.getLayerId() + " rows";
        WireTensors.Checked rows = WireTensors.read(wire, what, 2, WireDTypes.wire(sink.dtype()));
        if (rows.dim(1) != sink.latentDim()) throw new IllegalArgumentException(what + " are " + wire.getDtype() + " " + wire.getShapeList());
        byte[] bytes = new byte[rows.data().remaining()];
        rows.data().get(bytes);
        sink.writeLayer(layer.getLayerId(), layer.getTokenStart(), bytes);
        rowsPerLayer[layer.getLayerId()] += rows.dim(0);
      }
    } catch (RuntimeException e) {
      failure = e.getMessage();
    }
  }

  @Override
  public void onError(Throwable t) {
    Status s = Status.fromThrowable(t);
    FailureReason reason = failure != null ? FailureReason.INVALID_OBJECT : FailureReason.of(t);
    traced.failed(reason, failure != null ? failure : t.getMessage());
    done.accept(KvLoadResult.failed(loadReason(reason),
        failure != null ? failure : "kv-store " + store + ": " + s.getCode() + (s.getDescription() != null ? " " + s.getDescription() : "")));
  }

  @Override
  public void onCompleted() {
    if (failure == null)
      for (int l = 0; l < rowsPerLayer.length; l++)
        if (rowsPerLayer[l] != numTokens) {
          failure = "object " + key + " sent " + rowsPerLayer[l] + " of " + numTokens + " rows of layer " + l;
          break;
        }
    if (failure == null) {
      traced.succeeded();
      done.accept(KvLoadResult.LOADED);
    } else {
      traced.failed(FailureReason.INVALID_OBJECT, failure);
      done.accept(KvLoadResult.failed(KvLoadResult.Reason.INVALID_OBJECT, failure));
    }
  }

  /** The engine's reason for a failed get, from the transfer meters' one. */
  static KvLoadResult.Reason loadReason(FailureReason reason) {
    return switch (reason) {
      case STORE_UNAVAILABLE -> KvLoadResult.Reason.STORE_UNAVAILABLE;
      case DEADLINE_EXCEEDED -> KvLoadResult.Reason.TIMEOUT;
      case OBJECT_NOT_FOUND -> KvLoadResult.Reason.NOT_FOUND;
      case INVALID_OBJECT -> KvLoadResult.Reason.INVALID_OBJECT;
      case REJECTED -> KvLoadResult.Reason.REJECTED;
      case CANCELLED -> KvLoadResult.Reason.CANCELLED;
      case STORE_FULL, OTHER -> KvLoadResult.Reason.ERROR; // a get does not fill a store: a frame over the size limit
    };
  }
}
