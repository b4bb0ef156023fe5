package io.moemesh.decode;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.moemesh.engine.KvConnector;
import io.moemesh.kernels.DType;
import io.moemesh.proto.common.v1.Tensor;
import io.moemesh.proto.kvstore.v1.GetRequest;
import io.moemesh.proto.kvstore.v1.GetResponse;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.kvstore.v1.ReleaseRequest;
import io.moemesh.proto.kvstore.v1.ReleaseResponse;
import io.moemesh.proto.prefill.v1.KvTicket;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.jboss.logging.Logger;

/**
 * The decode role's side of KV transfer: for a request admitted with a ticket, pulls the object from the
 * kv-store named in the ticket layer by layer (each frame lands in the request's reserved pages as it
 * arrives), checks that every layer's every token came, then releases the object.
 */
@ApplicationScoped
public class StoreKvConnector implements KvConnector {
  private static final Logger LOG = Logger.getLogger(StoreKvConnector.class);
  private static final long LOAD_DEADLINE_SECONDS = 60;
  private final Map<String, KvTicket> tickets = new ConcurrentHashMap<>();
  private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();

  /** Remembers the ticket of a request about to be submitted with a KV import. */
  void expect(String requestId, KvTicket ticket) {
    tickets.put(requestId, ticket);
  }

  /** Drops a request's ticket if its KV was never loaded (finished or aborted first). */
  void forget(String requestId) {
    tickets.remove(requestId);
  }

  @Override
  public void saveLayer(String requestId, int layerId, int startPosition, byte[] rows) {
    throw new IllegalStateException("decode-svc imports KV; request " + requestId + " asked to export it");
  }

  @Override
  public void load(String requestId, int numTokens, KvSink sink, Consumer<String> done) {
    KvTicket ticket = tickets.remove(requestId);
    if (ticket == null) {
      done.accept("no KV ticket for request " + requestId);
      return;
    }
    if (ticket.getNumTokens() != numTokens) {
      done.accept("the ticket holds " + ticket.getNumTokens() + " tokens but the prompt has " + numTokens);
      return;
    }
    var stub = KvStoreGrpc.newStub(channel(ticket.getStoreAddress())).withDeadlineAfter(LOAD_DEADLINE_SECONDS, TimeUnit.SECONDS);
    stub.get(GetRequest.newBuilder().setKey(ticket.getObjectKey()).build(), new Receiver(ticket, numTokens, sink, done));
  }

  /** Checks each frame against the engine's cache, writes it, and reports once. */
  private final class Receiver implements StreamObserver<GetResponse> {
    private final KvTicket ticket;
    private final int numTokens;
    private final KvSink sink;
    private final Consumer<String> done;
    private final long[] rowsPerLayer;
    private volatile String failure;

    Receiver(KvTicket ticket, int numTokens, KvSink sink, Consumer<String> done) {
      this.ticket = ticket;
      this.numTokens = numTokens;
      this.sink = sink;
      this.done = done;
      this.rowsPerLayer = new long[sink.numLayers()];
    }

    @Override
    public void onNext(GetResponse frame) {
      if (failure != null) return;
      try {
        if (frame.hasInfo()) {
          var layout = frame.getInfo().getLayout();
          if (layout.getNumLayers() != sink.numLayers() || layout.getLatentDim() != sink.latentDim()
              || layout.getNumTokens() != numTokens || !dtypeMatches(layout.getDtype()))
            throw new IllegalArgumentException("object " + ticket.getObjectKey() + " has layout " + layout.toString().replace('\n', ' ')
                + " but this engine needs " + sink.numLayers() + " layers × " + numTokens + " tokens × " + sink.latentDim() + " " + sink.dtype());
        } else if (frame.hasLayer()) {
          var layer = frame.getLayer();
          Tensor rows = layer.getRows();
          if (!dtypeMatches(rows.getDtype()) || rows.getShapeCount() != 2 || rows.getShape(1) != sink.latentDim())
            throw new IllegalArgumentException("layer " + layer.getLayerId() + " rows are " + rows.getDtype() + " " + rows.getShapeList());
          sink.writeLayer(layer.getLayerId(), layer.getTokenStart(), rows.getData().toByteArray());
          rowsPerLayer[layer.getLayerId()] += rows.getShape(0);
        }
      } catch (RuntimeException e) {
        failure = e.getMessage();
      }
    }

    @Override
    public void onError(Throwable t) {
      Status s = Status.fromThrowable(t);
      done.accept(failure != null ? failure : "kv-store " + ticket.getStoreAddress() + ": " + s.getCode()
          + (s.getDescription() != null ? " " + s.getDescription() : ""));
    }

    @Override
    public void onCompleted() {
      if (failure == null)
        for (int l = 0; l < rowsPerLayer.length; l++)
          if (rowsPerLayer[l] != numTokens) {
            failure = "object " + ticket.getObjectKey() + " sent " + rowsPerLayer[l] + " of " + numTokens + " rows of layer " + l;
            break;
          }
      if (failure == null) release(ticket);
      done.accept(failure);
    }

    private boolean dtypeMatches(io.moemesh.proto.common.v1.DType wire) {
      return switch (wire) {
        case DTYPE_BF16 -> sink.dtype() == DType.BF16;
        case DTYPE_F32 -> sink.dtype() == DType.F32;
        default -> false;
      };
    }
  }

  /** Loaded: the store may drop the object (best effort; its lease would expire anyway). */
  private void release(KvTicket ticket) {
    KvStoreGrpc.newStub(channel(ticket.getStoreAddress())).withDeadlineAfter(10, TimeUnit.SECONDS)
        .release(ReleaseRequest.newBuilder().setKey(ticket.getObjectKey()).build(), new StreamObserver<>() {
          @Override
          public void onNext(ReleaseResponse value) {}

          @Override
          public void onError(Throwable t) {
            LOG.warnf("could not release KV object %s: %s", ticket.getObjectKey(), Status.fromThrowable(t));
          }

          @Override
          public void onCompleted() {}
        });
  }

  private ManagedChannel channel(String address) {
    return channels.computeIfAbsent(address,
        a -> ManagedChannelBuilder.forTarget(a).usePlaintext().maxInboundMessageSize(64 << 20).build());
  }

  @PreDestroy
  void close() {
    channels.values().forEach(ManagedChannel::shutdownNow);
  }
}
