package io.moemesh.kvstore;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.moemesh.kvstore.KvStoreMetrics.PutOutcome;
import io.moemesh.proto.kvstore.v1.LayerRows;
import io.moemesh.proto.kvstore.v1.PutFrame;
import io.moemesh.proto.kvstore.v1.PutResponse;
import io.moemesh.proto.kvstore.v1.PutStart;
import io.moemesh.proto.tensor.WireTensors;
import io.opentelemetry.api.trace.Span;
import java.time.Duration;
import java.util.concurrent.Executor;
import org.jboss.logging.Logger;

/**
 * One Put stream: {@code start → layer* → end | revoke}, then the client's half-close gets the reply.
 *
 * <p>Flow control is manual: the next frame is requested only once the previous one is copied, so a fast
 * writer is back-pressured by the transport instead of queuing frames on the heap. gRPC callbacks arrive on
 * an event loop and run, in order and one at a time, as tasks of a {@link SerialExecutor} on the
 * {@link CopyExecutor} (the half-close can follow the last frame before that frame is handled). Any
 * failure before {@code end} — a bad frame, a cancelled or broken stream, a half-close without end —
 * revokes the object, which frees its memory and nothing else. The call's span gets the object's key, bytes
 * and outcome ({@link KvSpans}).
 */
final class PutStreamHandler implements StreamObserver<PutFrame> {
  private static final Logger LOG = Logger.getLogger(PutStreamHandler.class);

  private enum Phase { AWAIT_START, WRITING, ENDED, CLOSED }

  private final KvObjectStore store;
  private final KvStoreMetrics metrics;
  private final Executor executor;
  private final ServerCallStreamObserver<PutResponse> call;
  private final Span span = KvSpans.ofCall(); // made in the service method, where the call's span is current
  private Phase phase = Phase.AWAIT_START;
  private PendingPut put;
  private PutResponse response;
  private long startNanos;

  PutStreamHandler(KvObjectStore store, KvStoreMetrics metrics, Executor executor, ServerCallStreamObserver<PutResponse> call) {
    this.store = store;
    this.metrics = metrics;
    this.executor = new SerialExecutor(executor);
    this.call = call;
    call.disableAutoRequest();
    call.request(1);
  }

  @Override
  public void onNext(PutFrame frame) {
    executor.execute(() -> handle(frame));
  }

  @Override
  public void onError(Throwable t) { // the client cancelled or the connection broke
    executor.execute(() -> abort("stream broke: " + t));
  }

  @Override
  public void onCompleted() {
    executor.execute(this::halfClosed);
  }

  private void handle(PutFrame frame) {
    if (phase == Phase.CLOSED) return;
    try {
      switch (frame.getFrameCase()) {
        case START -> start(frame.getStart());
        case LAYER -> layer(frame.getLayer());
        case END -> end();
        case REVOKE -> revoke(frame.getRevoke().getReason());
        case FRAME_NOT_SET -> throw KvStoreException.invalid("empty PutFrame: set start, layer, end or revoke");
      }
      call.request(1);
    } catch (RuntimeException e) {
      fail(e);
    }
  }

  private void start(PutStart start) {
    if (phase != Phase.AWAIT_START) throw KvStoreException.precondition("PutStart for '%s' after the put started: a stream carries one object", start.getKey());
    startNanos = System.nanoTime();
    KvLayout layout = ProtoMapping.layout(start.getKey(), start.hasLayout(), start.getLayout());
    long[] hashes = start.getPageHashesList().stream().mapToLong(Long::longValue).toArray();
    span.setAttribute(KvSpans.OBJECT_KEY, start.getKey());
    put = store.putStart(start.getKey(), layout, hashes, ProtoMapping.duration(start.hasLease(), start.getLease()));
    phase = Phase.WRITING;
  }

  private void layer(LayerRows rows) {
    requireWriting("layer");
    if (!rows.hasRows()) throw KvStoreException.invalid("put of '%s' layer %d: rows tensor is required", put.key(), rows.getLayerId());
    KvDType dtype = ProtoMapping.dtype("put of '%s' layer %d: rows.dtype".formatted(put.key(), rows.getLayerId()), rows.getRows().getDtype());
    WireTensors.Checked checked = ProtoMapping.rows("put of '%s' layer %d: rows".formatted(put.key(), rows.getLayerId()), rows.getRows());
    put.writeRows(rows.getLayerId(), rows.getTokenStart(), dtype, checked.longShape(), checked.data());
    metrics.putRows(rows.getRows().getData().size());
  }

  private void end() {
    requireWriting("end");
    PendingPut.Committed committed = put.end();
    response = PutResponse.newBuilder().setKey(committed.key())
        .setOutcome(io.moemesh.proto.kvstore.v1.PutOutcome.PUT_OUTCOME_COMMITTED).setBytes(committed.bytes())
        .setLeaseExpireTime(ProtoMapping.timestamp(committed.leaseEnd())).build();
    phase = Phase.ENDED;
    metrics.putEnded(PutOutcome.COMMITTED, Duration.ofNanos(System.nanoTime() - startNanos));
    span.setAttribute(KvSpans.BYTES, committed.bytes()).setAttribute(KvSpans.OUTCOME, "committed");
  }

  private void revoke(String reason) {
    requireWriting("revoke");
    put.revoke();
    LOG.debugf("put of '%s' revoked by the client: %s", put.key(), reason);
    response = PutResponse.newBuilder().setKey(put.key()).setOutcome(io.moemesh.proto.kvstore.v1.PutOutcome.PUT_OUTCOME_REVOKED).build();
    phase = Phase.ENDED;
    metrics.putEnded(PutOutcome.REVOKED, Duration.ZERO);
    span.setAttribute(KvSpans.OUTCOME, "revoked");
  }

  private void requireWriting(String frame) {
    switch (phase) {
      case AWAIT_START -> throw KvStoreException.precondition("the first frame of a put stream must be start, got %s", frame);
      case ENDED -> throw KvStoreException.precondition("put of '%s': %s frame after end or revoke (which stands)", put.key(), frame);
      case WRITING, CLOSED -> { }
    }
  }

  private void halfClosed() {
    if (phase == Phase.CLOSED) return;
    if (phase == Phase.ENDED) {
      phase = Phase.CLOSED;
      call.onNext(response);
      call.onCompleted();
    } else {
      String what = put == null ? "put stream closed before its start frame" : "put stream of '%s' closed without end or revoke; the object was revoked".formatted(put.key());
      fail(KvStoreException.precondition("%s", what));
    }
  }

  /** Answers with the failure's status and revokes an uncommitted object. */
  private void fail(RuntimeException failure) {
    abortPut();
    phase = Phase.CLOSED;
    call.onError(ProtoMapping.status(failure));
  }

  private void abort(String why) {
    if (phase == Phase.CLOSED) return;
    if (abortPut()) LOG.debugf("put of '%s' revoked: %s", put.key(), why);
    phase = Phase.CLOSED;
  }

  /** Revokes the object unless it was committed or revoked already; true if it did. */
  private boolean abortPut() {
    if (phase != Phase.WRITING) return false;
    put.revoke();
    metrics.putEnded(PutOutcome.FAILED, Duration.ZERO);
    span.setAttribute(KvSpans.OUTCOME, "failed");
    return true;
  }
}
