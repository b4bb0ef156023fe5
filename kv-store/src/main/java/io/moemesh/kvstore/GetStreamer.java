package io.moemesh.kvstore;

import io.grpc.stub.ServerCallStreamObserver;
import io.moemesh.proto.common.v1.Tensor;
import io.moemesh.proto.kvstore.v1.GetResponse;
import io.moemesh.proto.kvstore.v1.LayerRows;
import io.moemesh.proto.kvstore.v1.ObjectInfo;
import io.moemesh.proto.tensor.WireTensors;
import java.time.Duration;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Streams one pinned object: an info frame, then each layer's rows in token order (all, or a prefix), at most
 * {@code frameBytes} of rows per frame.
 *
 * <p>Frames are produced only while the transport {@linkplain ServerCallStreamObserver#isReady() is ready},
 * so at most a few frames of a multi-GB object exist on the heap at once, and each is built (one copy from
 * off-heap memory into the message) on the {@link CopyExecutor}, never on an event loop. The ready and cancel
 * callbacks only schedule {@link #drain}; the counter {@link #pending} keeps drains serial. The reader is
 * closed (the object unpinned) by the drain that ends the stream, so memory is never freed under a copy.
 */
final class GetStreamer {
  private final ObjectReader reader;
  private final ServerCallStreamObserver<GetResponse> call;
  private final Executor executor;
  private final KvStoreMetrics metrics;
  private final int rowsPerFrame;
  private final long startNanos = System.nanoTime();
  private final AtomicInteger pending = new AtomicInteger();
  private volatile boolean cancelled;
  // touched by drains only (serial)
  private boolean infoSent;
  private boolean finished;
  private int layerId;
  private int tokenStart;

  GetStreamer(ObjectReader reader, ServerCallStreamObserver<GetResponse> call, Executor executor, KvStoreMetrics metrics, long frameBytes) {
    this.reader = reader;
    this.call = call;
    this.executor = executor;
    this.metrics = metrics;
    this.rowsPerFrame = Math.clamp(frameBytes / reader.layout().rowBytes(), 1, reader.numTokens());
  }

  /** Must run in the gRPC method call itself: handlers can only be set there. */
  void start() {
    call.setOnCancelHandler(() -> {
      cancelled = true;
      schedule();
    });
    call.setOnReadyHandler(this::schedule);
    schedule();
  }

  private void schedule() {
    if (pending.getAndIncrement() == 0) executor.execute(this::drainLoop);
  }

  private void drainLoop() {
    int missed = 1;
    do {
      drain();
      missed = pending.addAndGet(-missed);
    } while (missed != 0);
  }

  private void drain() {
    if (finished) return;
    try {
      while (!cancelled && call.isReady()) {
        GetResponse frame = next();
        if (frame == null) {
          call.onCompleted();
          metrics.getCompleted(Duration.ofNanos(System.nanoTime() - startNanos));
          finish();
          return;
        }
        call.onNext(frame);
      }
      if (cancelled) finish();
    } catch (RuntimeException e) {
      finish();
      call.onError(ProtoMapping.status(e));
    }
  }

  private void finish() {
    finished = true;
    reader.close();
  }

  /** The next frame, or null after the last row of the last layer. */
  private GetResponse next() {
    KvLayout layout = reader.layout();
    if (!infoSent) {
      infoSent = true;
      ObjectInfo.Builder info = ObjectInfo.newBuilder().setKey(reader.key()).setLayout(ProtoMapping.layout(layout))
          .setBytes(reader.bytes()).setLeaseExpireTime(ProtoMapping.timestamp(reader.leaseEnd()));
      for (long h : reader.pageHashes()) info.addPageHashes(h);
      return GetResponse.newBuilder().setInfo(info).build();
    }
    if (layerId == layout.numLayers()) return null;
    int rows = Math.min(rowsPerFrame, reader.numTokens() - tokenStart);
    byte[] data = reader.readRows(layerId, tokenStart, rows);
    metrics.getRows(data.length);
    // The array is fresh and never written again: wrap it instead of copying it a second time.
    Tensor tensor = WireTensors.wrap(ProtoMapping.dtype(layout.dtype()), data, rows, layout.latentDim());
    GetResponse frame = GetResponse.newBuilder()
        .setLayer(LayerRows.newBuilder().setLayerId(layerId).setTokenStart(tokenStart).setRows(tensor)).build();
    tokenStart += rows;
    if (tokenStart == reader.numTokens()) {
      layerId++;
      tokenStart = 0;
    }
    return frame;
  }
}
