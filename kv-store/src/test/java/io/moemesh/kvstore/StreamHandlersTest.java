package io.moemesh.kvstore;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.moemesh.proto.common.v1.DType;
import io.moemesh.proto.common.v1.Tensor;
import io.moemesh.proto.kvstore.v1.GetResponse;
import io.moemesh.proto.kvstore.v1.LayerRows;
import io.moemesh.proto.kvstore.v1.PutEnd;
import io.moemesh.proto.kvstore.v1.PutFrame;
import io.moemesh.proto.kvstore.v1.PutOutcome;
import io.moemesh.proto.kvstore.v1.PutResponse;
import io.moemesh.proto.kvstore.v1.PutStart;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.InstantSource;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The stream handlers' flow control, ordering and cleanup, against a fake transport (no Quarkus). */
class StreamHandlersTest {
  /** 2 layers × 8 tokens × 4 values, BF16: rows of 8 bytes. */
  static final KvLayout LAYOUT = new KvLayout(2, 8, 4, KvDType.BF16, 4);
  static final Executor DIRECT = Runnable::run;

  final KvObjectStore store = new KvObjectStore(new KvObjectStore.Limits(1 << 20, Duration.ofSeconds(30), Duration.ofMinutes(5), Duration.ofMinutes(1)), InstantSource.system());
  final KvStoreMetrics metrics = new KvStoreMetrics(new SimpleMeterRegistry(), store);

  @AfterEach
  void closeStore() {
    store.close();
  }

  @Nested
  class Get {
    @Test
    void framesAreBuiltOnlyWhileTheTransportIsReady() {
      commit("a");
      FakeServerCall<GetResponse> call = new FakeServerCall<>();
      call.allow(0);
      new GetStreamer(store.get("a"), call, DIRECT, metrics, 16).start(); // 16 bytes: 2 rows per frame
      assertThat(call.sent()).isEmpty();
      assertThat(store.stats().pinnedObjects()).isEqualTo(1);

      call.allow(3);
      assertThat(call.sent()).hasSize(3);
      assertThat(call.sent().get(2).getLayer()).extracting(LayerRows::getLayerId, LayerRows::getTokenStart).containsExactly(0, 2);

      call.allow(100);
      assertThat(call.sent()).hasSize(1 + 2 * 4);
      assertThat(call.completed()).isTrue();
      assertThat(store.stats().pinnedObjects()).isZero();
    }

    @Test
    void cancelStopsTheStreamAndUnpins() {
      commit("a");
      FakeServerCall<GetResponse> call = new FakeServerCall<>();
      call.allow(0);
      new GetStreamer(store.get("a"), call, DIRECT, metrics, 16).start();
      call.allow(2);
      call.cancel();
      call.allow(100);
      assertThat(call.sent()).hasSize(2);
      assertThat(call.completed()).isFalse();
      assertThat(store.stats().pinnedObjects()).isZero();
    }
  }

  @Nested
  class Put {
    @Test
    void asksForOneFrameAtATime() {
      FakeServerCall<PutResponse> call = new FakeServerCall<>();
      PutStreamHandler handler = new PutStreamHandler(store, metrics, DIRECT, call);
      assertThat(call.autoRequestDisabled).isTrue();
      assertThat(call.requested()).isEqualTo(1);
      handler.onNext(start("a"));
      handler.onNext(rows(0, 0, 8));
      assertThat(call.requested()).isEqualTo(3);
    }

    @Test
    void halfCloseRightBehindTheLastFrameStillCommits() {
      ExecutorService pool = Executors.newFixedThreadPool(2);
      try {
        for (int i = 0; i < 20; i++) { // the transport delivers the half-close without waiting for a request
          FakeServerCall<PutResponse> call = new FakeServerCall<>();
          PutStreamHandler handler = new PutStreamHandler(store, metrics, pool, call);
          handler.onNext(start("k" + i));
          handler.onNext(rows(0, 0, 8));
          handler.onNext(rows(1, 0, 8));
          handler.onNext(PutFrame.newBuilder().setEnd(PutEnd.getDefaultInstance()).build());
          handler.onCompleted();
          await().atMost(Duration.ofSeconds(5)).until(() -> call.completed() || call.error() != null);
          assertThat(call.error()).isNull();
          assertThat(call.sent()).singleElement().extracting(PutResponse::getOutcome).isEqualTo(PutOutcome.PUT_OUTCOME_COMMITTED);
        }
      } finally {
        pool.shutdown();
      }
    }

    @Test
    void brokenStreamRevokesWithoutAnswering() {
      FakeServerCall<PutResponse> call = new FakeServerCall<>();
      PutStreamHandler handler = new PutStreamHandler(store, metrics, DIRECT, call);
      handler.onNext(start("a"));
      handler.onNext(rows(0, 0, 4));
      assertThat(store.stats().writingObjects()).isEqualTo(1);
      handler.onError(Status.CANCELLED.asRuntimeException());
      assertThat(store.stats()).extracting(KvObjectStore.Stats::writingObjects, KvObjectStore.Stats::usedBytes).containsExactly(0, 0L);
      assertThat(call.error()).isNull();
      assertThat(call.completed()).isFalse();
    }

    @Test
    void badFrameFailsTheStreamOnceAndRevokes() {
      FakeServerCall<PutResponse> call = new FakeServerCall<>();
      PutStreamHandler handler = new PutStreamHandler(store, metrics, DIRECT, call);
      handler.onNext(start("a"));
      handler.onNext(PutFrame.newBuilder().setLayer(LayerRows.newBuilder().setRows(Tensor.newBuilder().setDtype(DType.DTYPE_I8))).build());
      assertThat(call.error()).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(e.getStatus().getDescription()).isEqualTo("put of 'a' layer 0: rows.dtype must be DTYPE_BF16 or DTYPE_F32, got DTYPE_I8");
      });
      int requested = call.requested();
      handler.onNext(PutFrame.newBuilder().setEnd(PutEnd.getDefaultInstance()).build());
      handler.onCompleted();
      assertThat(call.requested()).isEqualTo(requested);
      assertThat(call.completed()).isFalse();
      assertThat(store.stats().usedBytes()).isZero();
    }
  }

  void commit(String key) {
    PendingPut put = store.putStart(key, LAYOUT, new long[0], null);
    for (int l = 0; l < 2; l++) put.writeRows(l, 0, KvDType.BF16, new long[] {8, 4}, ByteBuffer.allocate(64));
    put.end();
  }

  static PutFrame start(String key) {
    return PutFrame.newBuilder().setStart(PutStart.newBuilder().setKey(key).setLayout(ProtoMapping.layout(LAYOUT))).build();
  }

  static PutFrame rows(int layerId, int tokenStart, int rowCount) {
    Tensor rows = Tensor.newBuilder().setDtype(DType.DTYPE_BF16).addShape(rowCount).addShape(4)
        .setData(ByteString.copyFrom(new byte[rowCount * 8])).build();
    return PutFrame.newBuilder().setLayer(LayerRows.newBuilder().setLayerId(layerId).setTokenStart(tokenStart).setRows(rows)).build();
  }
}
