package io.moemesh.kvstore;

import static io.moemesh.kvstore.KvWire.ROW_BYTES;
import static io.moemesh.kvstore.KvWire.end;
import static io.moemesh.kvstore.KvWire.fullPut;
import static io.moemesh.kvstore.KvWire.layerFrames;
import static io.moemesh.kvstore.KvWire.layout;
import static io.moemesh.kvstore.KvWire.randomLayers;
import static io.moemesh.kvstore.KvWire.rows;
import static io.moemesh.kvstore.KvWire.start;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.micrometer.core.instrument.MeterRegistry;
import jakarta.inject.Inject;
import io.grpc.StatusRuntimeException;
import io.moemesh.proto.kvstore.v1.ExtendLeaseRequest;
import io.moemesh.proto.kvstore.v1.GetRequest;
import io.moemesh.proto.kvstore.v1.GetResponse;
import io.moemesh.proto.kvstore.v1.KvLayout;
import io.moemesh.proto.kvstore.v1.KvStore;
import io.moemesh.proto.kvstore.v1.LayerRows;
import io.moemesh.proto.kvstore.v1.LookupPrefixRequest;
import io.moemesh.proto.kvstore.v1.PutFrame;
import io.moemesh.proto.kvstore.v1.PutOutcome;
import io.moemesh.proto.kvstore.v1.PutResponse;
import io.moemesh.proto.kvstore.v1.PutRevoke;
import io.moemesh.proto.kvstore.v1.ReleaseRequest;
import io.moemesh.proto.kvstore.v1.StatsRequest;
import io.quarkus.grpc.GrpcClient;
import io.quarkus.test.junit.QuarkusTest;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.operators.multi.processors.UnicastProcessor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The gRPC adapter over the real wire: put streams, get streams and the unary calls, with their statuses. */
@QuarkusTest
class KvStoreGrpcServiceTest {
  static final Duration TIMEOUT = Duration.ofSeconds(5);

  @GrpcClient("kvstore")
  KvStore kvStore;

  @GrpcClient("kvstore")
  Channel channel;

  @Inject
  MeterRegistry meters;

  @Test
  void putStreamThenGetStreamRoundTripsByteExact() {
    String key = key();
    KvLayout layout = layout(3, 40);
    byte[][] layers = randomLayers(layout, 1);
    PutResponse put = put(fullPut(key, layout, layers, 101, 102));
    assertThat(put.getOutcome()).isEqualTo(PutOutcome.PUT_OUTCOME_COMMITTED);
    assertThat(put.getBytes()).isEqualTo(3L * 40 * ROW_BYTES);

    List<GetResponse> frames = get(key);
    assertThat(frames.getFirst().getInfo().getLayout()).isEqualTo(layout);
    assertThat(frames.getFirst().getInfo().getPageHashesList()).containsExactly(101L, 102L);
    assertThat(frames.getFirst().getInfo().getLeaseExpireTime()).isEqualTo(put.getLeaseExpireTime());
    byte[][] got = new byte[3][40 * ROW_BYTES];
    List<String> order = copyRows(frames, got);
    // 16 KiB frames hold 14 rows of 1152 bytes: each layer spans three frames, layers in order
    assertThat(order).containsExactly("0:0+14", "0:14+14", "0:28+12", "1:0+14", "1:14+14", "1:28+12", "2:0+14", "2:14+14", "2:28+12");
    assertThat(got).isDeepEqualTo(layers);
  }

  @Test
  void framesAboveGrpcsDefault4MiBLimitAreAccepted() {
    String key = key();
    KvLayout layout = layout(1, 4096); // one 4.7 MB frame: a 4096-token prefill chunk of one layer
    byte[][] layers = randomLayers(layout, 11);
    put(List.of(start(key, layout), rows(0, 0, 4096, layers[0]), end()));
    byte[] got = new byte[4096 * ROW_BYTES];
    List<GetResponse> frames = get(key);
    assertThat(frames).hasSize(1 + 293); // 4096 rows in frames of 14
    for (GetResponse frame : frames.subList(1, frames.size())) {
      frame.getLayer().getRows().getData().copyTo(got, frame.getLayer().getTokenStart() * ROW_BYTES);
    }
    assertThat(got).isEqualTo(layers[0]);
  }

  @Test
  void getBeforePutEndIsNotFoundThenTheCommittedObjectIs() {
    String key = key();
    KvLayout layout = layout(2, 20);
    byte[][] layers = randomLayers(layout, 2);
    UnicastProcessor<PutFrame> stream = UnicastProcessor.create();
    CompletableFuture<PutResponse> reply = kvStore.put(stream).subscribeAsCompletionStage();
    stream.onNext(start(key, layout));
    layerFrames(layers, 20, 16).forEach(stream::onNext);
    awaitGetFails(key, "object '" + key + "' is still being written (no PutEnd yet)");
    stream.onNext(end());
    stream.onComplete();
    assertThat(reply).succeedsWithin(TIMEOUT).extracting(PutResponse::getOutcome).isEqualTo(PutOutcome.PUT_OUTCOME_COMMITTED);
    assertThat(get(key)).hasSize(1 + 2 * 2);
  }

  @Test
  void brokenPutStreamRevokesTheObject() {
    String key = key();
    KvLayout layout = layout(2, 20);
    byte[][] layers = randomLayers(layout, 3);
    UnicastProcessor<PutFrame> stream = UnicastProcessor.create();
    CompletableFuture<PutResponse> reply = kvStore.put(stream).subscribeAsCompletionStage();
    stream.onNext(start(key, layout));
    stream.onNext(rows(0, 0, 16, layers[0]));
    awaitGetFails(key, "is still being written");
    stream.onError(new IllegalStateException("prefill replica crashed"));
    assertThat(reply).failsWithin(TIMEOUT).withThrowableThat().havingRootCause().isInstanceOf(IllegalStateException.class);
    awaitGetFails(key, "object '" + key + "' does not exist (never put, revoked, evicted or reaped)");
    assertThat(put(fullPut(key, layout, layers)).getOutcome()).isEqualTo(PutOutcome.PUT_OUTCOME_COMMITTED); // key free again
  }

  @Test
  void streamClosedWithoutEndIsFailedPreconditionAndRevoked() {
    String key = key();
    KvLayout layout = layout(1, 16);
    List<PutFrame> frames = new ArrayList<>(fullPut(key, layout, randomLayers(layout, 4)));
    frames.removeLast();
    assertStatus(() -> put(frames), Status.Code.FAILED_PRECONDITION,
        "put stream of '" + key + "' closed without end or revoke; the object was revoked");
    assertStatus(() -> get(key), Status.Code.NOT_FOUND, "does not exist");
  }

  @Test
  void revokeFrameFreesTheObject() {
    String key = key();
    KvLayout layout = layout(1, 16);
    List<PutFrame> frames = new ArrayList<>(fullPut(key, layout, randomLayers(layout, 5)));
    frames.set(frames.size() - 1, PutFrame.newBuilder().setRevoke(PutRevoke.newBuilder().setReason("request cancelled")).build());
    assertThat(put(frames).getOutcome()).isEqualTo(PutOutcome.PUT_OUTCOME_REVOKED);
    assertStatus(() -> get(key), Status.Code.NOT_FOUND, "does not exist");
  }

  @Test
  void badPutsAnswerPreciseStatusesAndLeaveNoObject() {
    String key = key();
    KvLayout layout = layout(2, 20);
    byte[][] layers = randomLayers(layout, 6);
    assertStatus(() -> put(List.of(start(key, layout.toBuilder().clearDtype().build()), end())), Status.Code.INVALID_ARGUMENT,
        "layout.dtype must be DTYPE_BF16 or DTYPE_F32, got DTYPE_UNSPECIFIED");
    assertStatus(() -> put(List.of(start(key, layout.toBuilder().setNumLayers(0).build()))), Status.Code.INVALID_ARGUMENT,
        "layout.num_layers must be in [1, 4096], got 0");
    assertStatus(() -> put(List.of(start(key, layout, 1, 2, 3))), Status.Code.INVALID_ARGUMENT,
        "3 page hashes for 1 full pages (20 tokens / page size 16)");
    assertStatus(() -> put(List.of(rows(0, 0, 1, layers[0]))), Status.Code.FAILED_PRECONDITION,
        "the first frame of a put stream must be start, got layer");
    assertStatus(() -> put(List.of(start(key, layout.toBuilder().setNumTokens(1 << 20).build()))), Status.Code.RESOURCE_EXHAUSTED,
        "the object needs 2415919104 bytes but the store holds at most 67108864 (max-bytes)");
    assertStatus(() -> put(List.of(start(key, layout), rows(0, 10, 11, new byte[21 * ROW_BYTES]))), Status.Code.INVALID_ARGUMENT,
        "put of '" + key + "' layer 0: rows [10, 21) fall outside [0, 20)");
    assertStatus(() -> put(List.of(start(key, layout), rows(0, 0, 16, layers[0]), end())), Status.Code.FAILED_PRECONDITION,
        "PutEnd of '" + key + "' before every row was written: layer 0 misses 4 rows, first [16, 20); layer 1 misses 20 rows, first [0, 20)");
    assertStatus(() -> get(key), Status.Code.NOT_FOUND, "does not exist");
    put(fullPut(key, layout, layers));
    assertStatus(() -> put(fullPut(key, layout, layers)), Status.Code.ALREADY_EXISTS,
        "key '" + key + "' is taken: the object is committed and live (objects are immutable)");
    assertThat(get(key)).hasSize(1 + 2 * 2); // the duplicate did not harm the original
  }

  @Test
  void leasesExtendAndReleaseEndsGettability() {
    String key = key();
    KvLayout layout = layout(1, 16);
    put(fullPut(key, layout, randomLayers(layout, 7)));
    long before = System.currentTimeMillis();
    var extended = kvStore.extendLease(ExtendLeaseRequest.newBuilder().setKey(key)
        .setTtl(ProtoMapping.duration(Duration.ofSeconds(120))).build()).await().atMost(TIMEOUT);
    long endMillis = extended.getLeaseExpireTime().getSeconds() * 1000 + extended.getLeaseExpireTime().getNanos() / 1_000_000;
    assertThat(endMillis).isBetween(before + 119_000, System.currentTimeMillis() + 120_000);
    assertStatus(() -> kvStore.extendLease(ExtendLeaseRequest.newBuilder().setKey(key)
        .setTtl(ProtoMapping.duration(Duration.ofHours(1))).build()).await().atMost(TIMEOUT), Status.Code.INVALID_ARGUMENT, "ttl PT1H exceeds the store's max-lease PT10M");

    release(key);
    release(key); // idempotent
    assertStatus(() -> get(key), Status.Code.NOT_FOUND, "object '" + key + "' was released");
    assertStatus(() -> release("missing-" + key), Status.Code.NOT_FOUND, "does not exist");
  }

  @Test
  void expiredObjectIsNotFound() {
    String key = key();
    KvLayout layout = layout(1, 16);
    List<PutFrame> frames = new ArrayList<>(fullPut(key, layout, randomLayers(layout, 12)));
    frames.set(0, frames.getFirst().toBuilder().setStart(frames.getFirst().getStart().toBuilder()
        .setLease(ProtoMapping.duration(Duration.ofMillis(1)))).build());
    put(frames);
    awaitGetFails(key, "object '" + key + "' has a lease that expired at "); // the test reaper runs hourly
  }

  @Test
  void getStreamFollowsTheReadersPaceAndUnpinsOnCancel() throws Exception {
    String key = key();
    KvLayout layout = layout(2, 4096); // 9.4 MB in 16 KiB frames
    put(fullPut(key, layout, randomLayers(layout, 13)));
    double sentBefore = meters.counter("moemesh.kvstore.get.bytes").count();
    SlowReader reader = new SlowReader(3); // takes three frames, then reads nothing
    KvStoreGrpc.newStub(channel).get(GetRequest.newBuilder().setKey(key).build(), reader);
    assertThat(reader.firstFrames.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).hasSize(3);
    assertThat(stats().getPinnedObjects()).isEqualTo(1);
    reader.call.cancel("decode has enough", null);
    await().atMost(5, TimeUnit.SECONDS).pollInterval(Duration.ofMillis(20)).until(() -> stats().getPinnedObjects() == 0);
    // the server stopped at the transport's flow-control windows (about 1 MiB), not at the object's end
    double sent = meters.counter("moemesh.kvstore.get.bytes").count() - sentBefore;
    assertThat(sent).isLessThan(4096 * ROW_BYTES);
    release(key);
  }

  /** A client that asks for {@code frames} frames and no more: grpc-java's manual inbound flow control. */
  static final class SlowReader implements ClientResponseObserver<GetRequest, GetResponse> {
    final CompletableFuture<List<GetResponse>> firstFrames = new CompletableFuture<>();
    final List<GetResponse> frames = new ArrayList<>();
    final int wanted;
    volatile ClientCallStreamObserver<GetRequest> call;

    SlowReader(int wanted) {
      this.wanted = wanted;
    }

    @Override
    public void beforeStart(ClientCallStreamObserver<GetRequest> call) {
      this.call = call;
      call.disableAutoRequestWithInitial(wanted);
    }

    @Override
    public synchronized void onNext(GetResponse frame) {
      frames.add(frame);
      if (frames.size() == wanted) firstFrames.complete(List.copyOf(frames));
    }

    @Override
    public void onError(Throwable t) {
      firstFrames.completeExceptionally(t);
    }

    @Override
    public void onCompleted() {
      firstFrames.completeExceptionally(new AssertionError("the whole object arrived"));
    }
  }

  @Test
  void aPrefixGetStreamsTheFirstRowsOfEachLayerAlsoAfterRelease() {
    String key = key();
    KvLayout layout = layout(2, 40);
    byte[][] layers = randomLayers(layout, 14);
    put(fullPut(key, layout, layers, 201, 202));
    release(key);
    assertStatus(() -> get(key), Status.Code.NOT_FOUND, "was released");
    List<GetResponse> frames = kvStore.get(GetRequest.newBuilder().setKey(key).setPrefixTokens(20).build()).collect().asList().await().atMost(TIMEOUT);
    assertThat(frames.getFirst().getInfo().getLayout()).as("the object's own layout").isEqualTo(layout);
    byte[][] got = new byte[2][20 * ROW_BYTES];
    List<String> order = copyRows(frames, got);
    assertThat(order).containsExactly("0:0+14", "0:14+6", "1:0+14", "1:14+6");
    for (int l = 0; l < 2; l++) assertThat(got[l]).isEqualTo(java.util.Arrays.copyOf(layers[l], 20 * ROW_BYTES));
    assertStatus(() -> kvStore.get(GetRequest.newBuilder().setKey(key).setPrefixTokens(41).build()).collect().asList().await().atMost(TIMEOUT),
        Status.Code.INVALID_ARGUMENT, "41 tokens asked, the object holds 40");
  }

  @Test
  void lookupPrefixFindsTheLongestLeadingRun() {
    long base = UUID.randomUUID().getMostSignificantBits();
    KvLayout layout = layout(1, 48);
    String shorter = key(), longer = key();
    put(fullPut(shorter, layout, randomLayers(layout, 8), base, base + 1, base + 9));
    put(fullPut(longer, layout, randomLayers(layout, 9), base, base + 1, base + 2));
    var match = kvStore.lookupPrefix(LookupPrefixRequest.newBuilder()
        .addPageHashes(base).addPageHashes(base + 1).addPageHashes(base + 2).addPageHashes(base + 3).build()).await().atMost(TIMEOUT);
    assertThat(match.getKey()).isEqualTo(longer);
    assertThat(match.getMatchedPages()).isEqualTo(3);
    assertThat(match.getMatchedTokens()).isEqualTo(48);
    assertThat(match.getGettable()).isTrue();
    var none = kvStore.lookupPrefix(LookupPrefixRequest.newBuilder().addPageHashes(base - 1).build())
        .await().atMost(TIMEOUT);
    assertThat(none.getMatchedPages()).isZero();
    assertThat(none.getKey()).isEmpty();
  }

  @Test
  void statsReportTheBoundAndTheObjects() {
    String key = key();
    KvLayout layout = layout(1, 16);
    put(fullPut(key, layout, randomLayers(layout, 10)));
    var stats = stats();
    assertThat(stats.getMaxBytes()).isEqualTo(64L << 20);
    assertThat(stats.getLiveObjects()).isPositive();
    assertThat(stats.getUsedBytes()).isGreaterThanOrEqualTo(16L * ROW_BYTES).isLessThanOrEqualTo(stats.getMaxBytes());
  }

  // ---- helpers -----------------------------------------------------------------------------------------

  /** Copies a Get's layer frames into {@code layers} by position; returns them as "layer:start+rows", in order. */
  static List<String> copyRows(List<GetResponse> frames, byte[][] layers) {
    List<String> order = new ArrayList<>();
    for (GetResponse frame : frames.subList(1, frames.size())) {
      LayerRows rows = frame.getLayer();
      order.add(rows.getLayerId() + ":" + rows.getTokenStart() + "+" + rows.getRows().getShape(0));
      rows.getRows().getData().copyTo(layers[rows.getLayerId()], rows.getTokenStart() * ROW_BYTES);
    }
    return order;
  }

  static String key() {
    return "req-" + UUID.randomUUID();
  }

  PutResponse put(List<PutFrame> frames) {
    return kvStore.put(Multi.createFrom().iterable(frames)).await().atMost(TIMEOUT);
  }

  List<GetResponse> get(String key) {
    return kvStore.get(GetRequest.newBuilder().setKey(key).build()).collect().asList().await().atMost(TIMEOUT);
  }

  io.moemesh.proto.kvstore.v1.StatsResponse stats() {
    return kvStore.stats(StatsRequest.getDefaultInstance()).await().atMost(TIMEOUT);
  }

  void release(String key) {
    kvStore.release(ReleaseRequest.newBuilder().setKey(key).build()).await().atMost(TIMEOUT);
  }

  void awaitGetFails(String key, String messagePart) {
    await().atMost(5, TimeUnit.SECONDS).pollInterval(Duration.ofMillis(20)).untilAsserted(
        () -> assertStatus(() -> get(key), Status.Code.NOT_FOUND, messagePart));
  }

  static void assertStatus(Runnable call, Status.Code code, String messagePart) {
    Throwable thrown = catchThrowable(call::run);
    assertThat(thrown).isInstanceOf(StatusRuntimeException.class);
    Status status = ((StatusRuntimeException) thrown).getStatus();
    assertThat(status.getCode()).isEqualTo(code);
    assertThat(status.getDescription()).contains(messagePart);
  }
}
