package io.moemesh.prefill;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.moemesh.engine.GenerationRequest;
import io.moemesh.engine.LoadedEngine;
import io.moemesh.enginehost.testing.TinyCheckpointResource;
import io.moemesh.enginehost.EngineHost;
import jakarta.inject.Inject;
import io.moemesh.model.sampling.SamplingParams;
import io.moemesh.proto.common.v1.DType;
import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.common.v1.LoadReportRequest;
import io.moemesh.proto.kvstore.v1.PutFrame;
import io.moemesh.proto.prefill.v1.Prefill;
import io.moemesh.proto.prefill.v1.PrefillRequest;
import io.quarkus.grpc.GrpcClient;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** prefill-svc over real gRPC on the tiny model (16-token chunks), with a recording kv-store. */
@QuarkusTest
@QuarkusTestResource(TinyCheckpointResource.class)
class PrefillServiceTest {
  static final Duration TIMEOUT = Duration.ofSeconds(60);
  static LoadedEngine reference;

  @GrpcClient("prefill")
  Prefill prefill;

  @Inject EngineHost host;

  @BeforeAll
  static void startReference() {
    reference = TinyCheckpointResource.reference();
  }

  @AfterAll
  static void stopReference() {
    reference.close();
  }

  @BeforeEach
  void awaitReady() {
    await().atMost(TIMEOUT).ignoreExceptions().until(() -> prefill.load(LoadReportRequest.getDefaultInstance()).await().atMost(TIMEOUT) != null);
  }

  static int[] prompt(long seed, int length) {
    return new SplittableRandom(seed).ints(length, 2, 1000).toArray();
  }

  static PrefillRequest request(String id, int[] prompt, io.moemesh.proto.common.v1.SamplingParams sampling) {
    return PrefillRequest.newBuilder().setRequestId(id).addAllPromptTokenIds(IntStream.of(prompt).boxed().toList()).setSampling(sampling).build();
  }

  static final io.moemesh.proto.common.v1.SamplingParams GREEDY = io.moemesh.proto.common.v1.SamplingParams.newBuilder().setIgnoreEos(true).build();

  int firstToken(int[] prompt, SamplingParams params) throws Exception {
    return reference.engine().submit(GenerationRequest.of("ref-" + prompt.length, prompt, params, 1)).await(TIMEOUT).tokenIds()[0];
  }

  @Test
  void streamsEachLayerOfEachChunkThenCommitsAndAnswersWithTheTicketAndFirstToken() throws Exception {
    int[] p = prompt(1, 40);
    var response = prefill.prefill(request("p1", p, GREEDY)).await().atMost(TIMEOUT);
    assertThat(response.getFirstToken().getTokenId()).isEqualTo(firstToken(p, SamplingParams.greedy().toBuilder().ignoreEos(true).build()));
    assertThat(response.getSampledDraws()).isZero();
    var ticket = response.getTicket();
    assertThat(ticket.getObjectKey()).isEqualTo("p1");
    assertThat(ticket.getStoreAddress()).isEqualTo("localhost:19201");
    assertThat(ticket.getNumTokens()).isEqualTo(40);
    assertThat(ticket.getLayout().getNumLayers()).isEqualTo(3);
    assertThat(ticket.getLayout().getLatentDim()).isEqualTo(40); // kv_lora_rank 32 + qk_rope_head_dim 8
    assertThat(ticket.getLayout().getDtype()).isEqualTo(DType.DTYPE_BF16);

    List<PutFrame> frames = FakeKvStore.FRAMES.get("p1");
    assertThat(frames.getFirst().getStart().getPageHashesCount()).isEqualTo(40 / 16);
    assertThat(frames.getLast().hasEnd()).isTrue();
    var layers = frames.subList(1, frames.size() - 1);
    assertThat(layers).as("3 chunks (16 + 16 + 8 tokens) × 3 layers, chunk by chunk, layer by layer")
        .extracting(f -> f.getLayer().getTokenStart() + "/" + f.getLayer().getLayerId())
        .containsExactly("0/0", "0/1", "0/2", "16/0", "16/1", "16/2", "32/0", "32/1", "32/2");
    assertThat(layers).extracting(f -> f.getLayer().getRows().getShape(0)).containsExactly(16L, 16L, 16L, 16L, 16L, 16L, 8L, 8L, 8L);
    assertThat(layers).allSatisfy(f -> assertThat(f.getLayer().getRows().getData().size()).isEqualTo(f.getLayer().getRows().getShape(0) * 40 * 2));
  }

  @Test
  void aFirstTokenThatStopsTheRequestRevokesTheObjectAndSendsNoTicket() throws Exception {
    int[] p = prompt(2, 12);
    int first = firstToken(p, SamplingParams.greedy().toBuilder().ignoreEos(true).build());
    var stopping = io.moemesh.proto.common.v1.SamplingParams.newBuilder().setIgnoreEos(true).addStopTokenIds(first).build();
    var response = prefill.prefill(request("p2", p, stopping)).await().atMost(TIMEOUT);
    assertThat(response.getFinishReason()).isEqualTo(FinishReason.FINISH_REASON_STOP);
    assertThat(response.hasTicket()).isFalse();
    await().atMost(TIMEOUT).until(() -> FakeKvStore.FRAMES.get("p2").getLast().hasRevoke());
  }

  /** The engine runs one request at a time here; a long local request holds the slot while p3 waits. */
  @Test
  void cancellingTheCallAbortsTheRequestAndRevokesItsObject() throws Exception {
    var blocker = host.engine().submit(GenerationRequest.of("blocker", prompt(9, 8),
        SamplingParams.greedy().toBuilder().ignoreEos(true).build(), 100_000));
    blocker.next(TIMEOUT); // running
    // a grpc-java future: cancelling it cancels the RPC (a Mutiny unary call does not propagate its cancellation)
    var channel = io.grpc.ManagedChannelBuilder.forTarget("localhost:19201").usePlaintext().build();
    try {
      var call = io.moemesh.proto.prefill.v1.PrefillGrpc.newFutureStub(channel).prefill(request("p3", prompt(3, 100), GREEDY));
      await().atMost(TIMEOUT).until(() -> !FakeKvStore.FRAMES.getOrDefault("p3", List.of()).isEmpty()); // PutStart sent
      call.cancel(true);
    } finally {
      channel.shutdownNow();
    }
    await().atMost(TIMEOUT).until(() -> FakeKvStore.FRAMES.get("p3").getLast().hasRevoke());
    host.engine().abort("blocker");
    await().atMost(TIMEOUT).untilAsserted(() -> {
      var load = prefill.load(LoadReportRequest.getDefaultInstance()).await().atMost(TIMEOUT);
      assertThat(load.getNumRunning() + load.getNumWaiting()).isZero();
      assertThat(load.getKvCacheUsage()).isZero();
    });
    assertThat(FakeKvStore.FRAMES.get("p3")).noneMatch(PutFrame::hasEnd).noneMatch(PutFrame::hasLayer);
  }

  @Test
  void anInvalidRequestIsInvalidArgumentAndOpensNoObject() {
    assertThatThrownBy(() -> prefill.prefill(request("p4", new int[] {3, 5000}, GREEDY)).await().atMost(TIMEOUT))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
          assertThat(e.getStatus().getDescription()).isEqualTo("request p4: prompt token id 5000 is outside the vocabulary [0, 1024)");
        });
    assertThat(FakeKvStore.FRAMES).doesNotContainKey("p4");
  }
}
