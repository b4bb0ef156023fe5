package io.moemesh.decode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.moemesh.enginehost.testing.TinyCheckpointResource;
import io.moemesh.proto.common.v1.LoadReport;
import io.moemesh.proto.common.v1.LoadReportRequest;
import io.moemesh.proto.common.v1.SampledToken;
import io.moemesh.proto.decode.v1.DecodeGrpc;
import io.moemesh.proto.decode.v1.GenerateRequest;
import io.moemesh.proto.decode.v1.GenerateResponse;
import io.moemesh.proto.prefill.v1.KvTicket;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Decode requests cancelled before their KV arrived, with one request slot and a kv-store that never answers a
 * Get: one request loading (WAITING_FOR_REMOTE_KV, pages reserved) holds the slot, the next waits for it.
 */
@QuarkusTest
@TestProfile(DecodeCancellationTest.OneSlot.class)
@QuarkusTestResource(TinyCheckpointResource.class)
class DecodeCancellationTest {
  static final Duration TIMEOUT = Duration.ofSeconds(60);
  static final String STORE = "localhost:19301"; // FakeKvStore, served by this test app

  /** One running or loading request at a time; leases extended to 1 s. */
  public static class OneSlot implements QuarkusTestProfile {
    @Override
    public Map<String, String> getConfigOverrides() {
      return Map.of("moemesh.engine.max-running-requests", "1", "moemesh.decode.kv-lease-extension", "1s");
    }
  }

  ManagedChannel channel;

  @BeforeEach
  void open() {
    channel = ManagedChannelBuilder.forTarget(STORE).usePlaintext().build();
    await().atMost(TIMEOUT).ignoreExceptions().until(() -> load() != null);
  }

  @AfterEach
  void close() {
    channel.shutdownNow();
  }

  LoadReport load() {
    return DecodeGrpc.newBlockingStub(channel).load(LoadReportRequest.getDefaultInstance());
  }

  /** Starts Generate with a ticket for {@code key} in a context whose cancellation cancels the call. */
  Context.CancellableContext generate(String key, Instant leaseEnd) {
    int[] prompt = DecodeServiceTest.prompt(key.hashCode(), 20);
    var ticket = KvTicket.newBuilder().setStoreAddress(STORE).setObjectKey(key).setNumTokens(prompt.length)
        .setLeaseExpireTime(com.google.protobuf.Timestamp.newBuilder().setSeconds(leaseEnd.getEpochSecond()).setNanos(leaseEnd.getNano()));
    var request = GenerateRequest.newBuilder().setRequestId(key).addAllPromptTokenIds(IntStream.of(prompt).boxed().toList())
        .setMaxTokens(8).setTicket(ticket).setFirstToken(SampledToken.newBuilder().setTokenId(7)).build();
    Context.CancellableContext call = Context.current().withCancellation();
    call.run(() -> DecodeGrpc.newStub(channel).generate(request, new StreamObserver<GenerateResponse>() {
      @Override public void onNext(GenerateResponse value) {}
      @Override public void onError(Throwable t) {}
      @Override public void onCompleted() {}
    }));
    return call;
  }

  @Test
  void cancellingWhileTheKvLoadsCancelsTheLoadFreesItsPagesAndReleasesTheObject() {
    FakeKvStore.hang("loading");
    var call = generate("loading", Instant.now().plusSeconds(60));
    await().atMost(TIMEOUT).untilAsserted(() -> {
      assertThat(FakeKvStore.GETS_CANCELLED).containsEntry("loading", false);
      assertThat(load().getNumLoadingKv()).isOne();
      assertThat(load().getKvCacheUsage()).as("pages reserved for the arriving KV").isPositive();
    });
    call.cancel(null);
    await().atMost(TIMEOUT).untilAsserted(() -> {
      assertThat(FakeKvStore.GETS_CANCELLED).containsEntry("loading", true);
      assertThat(FakeKvStore.RELEASED).contains("loading");
      LoadReport idle = load();
      assertThat(idle.getNumLoadingKv() + idle.getNumWaiting() + idle.getNumRunning()).isZero();
      assertThat(idle.getKvCacheUsage()).isZero();
    });
  }

  @Test
  void aQueuedRequestKeepsItsObjectAliveUntilCancelledThenReleasesIt() {
    FakeKvStore.hang("blocker");
    FakeKvStore.hang("queued");
    var blocker = generate("blocker", Instant.now().plusSeconds(60));
    await().atMost(TIMEOUT).until(() -> load().getNumLoadingKv() == 1);
    Instant leaseEnd = Instant.now().plusSeconds(1);
    var queued = generate("queued", leaseEnd);
    await().atMost(TIMEOUT).until(() -> load().getNumWaiting() == 1);
    await().atMost(TIMEOUT).until(() -> FakeKvStore.extensionsOf("queued").size() >= 3);
    var extensions = FakeKvStore.extensionsOf("queued");
    assertThat(extensions.getFirst().at()).as("the first extension comes before the ticket's lease ends").isBefore(leaseEnd);
    assertThat(extensions).allSatisfy(e -> assertThat(e.ttl()).isEqualTo(Duration.ofSeconds(1)));
    for (int i = 1; i < extensions.size(); i++)
      assertThat(Duration.between(extensions.get(i - 1).at(), extensions.get(i).at())).as("each before the last one's lease ends")
          .isLessThan(Duration.ofSeconds(1));
    assertThat(FakeKvStore.GETS_CANCELLED).as("still queued: no load").doesNotContainKey("queued");

    queued.cancel(null);
    await().atMost(TIMEOUT).untilAsserted(() -> {
      assertThat(FakeKvStore.RELEASED).contains("queued");
      assertThat(load().getNumWaiting()).isZero();
    });
    assertThat(FakeKvStore.GETS_CANCELLED).doesNotContainKey("queued");
    blocker.cancel(null);
    await().atMost(TIMEOUT).untilAsserted(() -> {
      LoadReport idle = load();
      assertThat(idle.getNumLoadingKv() + idle.getNumWaiting() + idle.getNumRunning()).isZero();
      assertThat(idle.getKvCacheUsage()).isZero();
    });
  }
}
