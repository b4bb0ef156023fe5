package io.moemesh.prefill;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.moemesh.enginehost.testing.TinyCheckpointResource;
import io.moemesh.proto.common.v1.LoadReportRequest;
import io.moemesh.proto.kvstore.v1.PutFrame;
import io.moemesh.proto.prefill.v1.PrefillGrpc;
import io.moemesh.proto.prefill.v1.PrefillRequest;
import io.moemesh.telemetry.testing.Scrape;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A Prefill call cancelled while its chunks run (16-token chunks here, so a long prompt takes many steps): the
 * engine aborts the request — it does not fail it — frees its pages, and the half-written object is revoked.
 */
@QuarkusTest
@QuarkusTestResource(TinyCheckpointResource.class)
class PrefillCancellationTest {
  static final Duration TIMEOUT = Duration.ofSeconds(60);
  ManagedChannel channel;

  @BeforeEach
  void open() {
    channel = ManagedChannelBuilder.forTarget("localhost:19201").usePlaintext().build();
    var stub = PrefillGrpc.newBlockingStub(channel);
    await().atMost(TIMEOUT).ignoreExceptions().until(() -> stub.load(LoadReportRequest.getDefaultInstance()) != null);
  }

  @AfterEach
  void close() {
    channel.shutdownNow();
  }

  @Test
  void cancellingMidPrefillAbortsTheRequestAndRevokesTheHalfWrittenObject() throws Exception {
    double aborted = finished("abort"), failed = finished("error");
    int[] prompt = PrefillServiceTest.prompt(11, 500); // 32 chunks of 16 tokens, 3 layers each
    var call = PrefillGrpc.newFutureStub(channel).prefill(PrefillRequest.newBuilder().setRequestId("mid")
        .addAllPromptTokenIds(java.util.stream.IntStream.of(prompt).boxed().toList()).setSampling(PrefillServiceTest.GREEDY).build());
    await().atMost(TIMEOUT).pollInterval(Duration.ofMillis(1))
        .until(() -> FakeKvStore.FRAMES.getOrDefault("mid", List.of()).stream().anyMatch(PutFrame::hasLayer));
    call.cancel(true);

    await().atMost(TIMEOUT).until(() -> FakeKvStore.FRAMES.get("mid").getLast().hasRevoke());
    List<PutFrame> frames = FakeKvStore.FRAMES.get("mid");
    assertThat(frames).as("the prefill finished before the cancel reached it").noneMatch(PutFrame::hasEnd);
    assertThat(frames.stream().filter(PutFrame::hasLayer).count()).as("layer frames sent before the cancel").isLessThan(32 * 3);
    await().atMost(TIMEOUT).untilAsserted(() -> {
      var load = PrefillGrpc.newBlockingStub(channel).load(LoadReportRequest.getDefaultInstance());
      assertThat(load.getNumRunning() + load.getNumWaiting()).isZero();
      assertThat(load.getKvCacheUsage()).isZero();
      assertThat(finished("abort")).as("aborted by the cancel").isEqualTo(aborted + 1);
    });
    assertThat(finished("error")).as("a layer computed after the revoke is dropped, not an engine failure").isEqualTo(failed);
    assertThat(FakeKvStore.RELEASED).doesNotContain("mid");
  }

  /** {@code vllm:request_success_total{finished_reason=reason}} of the service. */
  static double finished(String reason) throws Exception {
    return Scrape.of(19200).sum("vllm:request_success_total{finished_reason=\"" + reason + "\"}");
  }
}
