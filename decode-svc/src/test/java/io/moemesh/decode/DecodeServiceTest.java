package io.moemesh.decode;

import io.moemesh.enginehost.ProtoMapping;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.moemesh.engine.GenerationRequest;
import io.moemesh.engine.LoadedEngine;
import io.moemesh.enginehost.testing.TinyCheckpointResource;
import io.moemesh.model.sampling.SamplingParams;
import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.common.v1.LoadReportRequest;
import io.moemesh.proto.common.v1.SampledToken;
import io.moemesh.proto.decode.v1.Decode;
import io.moemesh.proto.decode.v1.GenerateRequest;
import io.moemesh.proto.decode.v1.GenerateResponse;
import io.moemesh.proto.decode.v1.LoadFailurePolicy;
import io.moemesh.proto.prefill.v1.KvTicket;
import io.moemesh.telemetry.testing.Scrape;
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

/** decode-svc over real gRPC on the tiny model, against the engine run in this JVM. */
@QuarkusTest
@QuarkusTestResource(TinyCheckpointResource.class)
class DecodeServiceTest {
  static final Duration TIMEOUT = Duration.ofSeconds(60);
  static LoadedEngine reference;

  @GrpcClient("decode")
  Decode decode;

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
    await().atMost(TIMEOUT).ignoreExceptions().until(() -> decode.load(LoadReportRequest.getDefaultInstance()).await().atMost(TIMEOUT) != null);
  }

  static int[] prompt(long seed, int length) {
    return new SplittableRandom(seed).ints(length, 2, 1000).toArray();
  }

  static GenerateRequest request(String id, int[] prompt, io.moemesh.proto.common.v1.SamplingParams sampling, int maxTokens) {
    return GenerateRequest.newBuilder().setRequestId(id).addAllPromptTokenIds(IntStream.of(prompt).boxed().toList())
        .setSampling(sampling).setMaxTokens(maxTokens).build();
  }

  static io.moemesh.proto.common.v1.SamplingParams seeded(long seed) {
    return io.moemesh.proto.common.v1.SamplingParams.newBuilder().setTemperature(0.8).setTopP(0.9).setSeed(seed).setIgnoreEos(true).build();
  }

  List<Integer> tokens(List<GenerateResponse> stream) {
    return stream.stream().flatMap(r -> r.getTokensList().stream()).map(SampledToken::getTokenId).toList();
  }

  int[] expected(String id, int[] prompt, SamplingParams params, int maxTokens) throws Exception {
    return reference.engine().submit(GenerationRequest.of(id, prompt, params, maxTokens)).await(TIMEOUT).tokenIds();
  }

  @Test
  void streamsTheTokensOfTheEngineRunInProcess() throws Exception {
    var greedy = io.moemesh.proto.common.v1.SamplingParams.newBuilder().setIgnoreEos(true).build();
    var a = decode.generate(request("a", prompt(1, 23), greedy, 12)).collect().asList();
    var b = decode.generate(request("b", prompt(2, 9), seeded(7), 10)).collect().asList();
    List<GenerateResponse> first = a.await().atMost(TIMEOUT), second = b.await().atMost(TIMEOUT);
    assertThat(tokens(first)).containsExactly(IntStream.of(expected("a", prompt(1, 23), SamplingParams.greedy().toBuilder().ignoreEos(true).build(), 12)).boxed().toArray(Integer[]::new));
    assertThat(tokens(second)).containsExactly(IntStream.of(expected("b", prompt(2, 9), ProtoMapping.sampling(seeded(7)), 10)).boxed().toArray(Integer[]::new));
    GenerateResponse last = first.getLast();
    assertThat(last.getFinishReason()).isEqualTo(FinishReason.FINISH_REASON_LENGTH);
    assertThat(last.getUsage().getPromptTokens()).isEqualTo(23);
    assertThat(last.getUsage().getCompletionTokens()).isEqualTo(12);
  }

  @Test
  void invalidRequestsAreInvalidArgumentWithTheWireName() {
    var badTopP = io.moemesh.proto.common.v1.SamplingParams.newBuilder().setTopP(1.5).build();
    assertThatThrownBy(() -> decode.generate(request("bad", prompt(3, 5), badTopP, 4)).collect().asList().await().atMost(TIMEOUT))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
          assertThat(e.getStatus().getDescription()).isEqualTo("top_p must be in (0, 1], got 1.5");
        });
    var greedy = io.moemesh.proto.common.v1.SamplingParams.getDefaultInstance();
    assertThatThrownBy(() -> decode.generate(request("oov", new int[] {5, 4096}, greedy, 4)).collect().asList().await().atMost(TIMEOUT))
        .hasMessageContaining("prompt token id 4096 is outside the vocabulary [0, 1024)");
  }

  @Test
  void cancellingTheCallAbortsTheRequestAndFreesItsPages() {
    var endless = io.moemesh.proto.common.v1.SamplingParams.newBuilder().setIgnoreEos(true).build();
    var firstTwo = decode.generate(request("long", prompt(4, 30), endless, 100_000)).select().first(2).collect().asList()
        .await().atMost(TIMEOUT);
    assertThat(firstTwo).hasSize(2);
    await().atMost(TIMEOUT).untilAsserted(() -> {
      var load = decode.load(LoadReportRequest.getDefaultInstance()).await().atMost(TIMEOUT);
      assertThat(load.getNumRunning()).isZero();
      assertThat(load.getKvCacheUsage()).isZero();
    });
  }

  @Test
  void aTicketWhoseStoreIsGoneFailsOrRecomputesAsAsked() throws Exception {
    int[] p = prompt(5, 12);
    var greedy = io.moemesh.proto.common.v1.SamplingParams.newBuilder().setIgnoreEos(true).build();
    int[] all = expected("ref", p, SamplingParams.greedy().toBuilder().ignoreEos(true).build(), 6);
    var ticket = KvTicket.newBuilder().setStoreAddress("localhost:1").setObjectKey("gone").setNumTokens(p.length).build();
    var first = SampledToken.newBuilder().setTokenId(all[0]).build();
    var failing = request("fail", p, greedy, 6).toBuilder().setTicket(ticket).setFirstToken(first)
        .setOnLoadFailure(LoadFailurePolicy.LOAD_FAILURE_POLICY_FAIL).build();
    var failed = decode.generate(failing).collect().asList().await().atMost(TIMEOUT).getLast();
    assertThat(failed.getFinishReason()).isEqualTo(FinishReason.FINISH_REASON_ERROR);
    assertThat(failed.getError()).startsWith("the prompt's KV could not be loaded: kv-store localhost:1: UNAVAILABLE");

    var recomputing = failing.toBuilder().setRequestId("recompute").setOnLoadFailure(LoadFailurePolicy.LOAD_FAILURE_POLICY_RECOMPUTE).build();
    var recomputed = decode.generate(recomputing).collect().asList().await().atMost(TIMEOUT);
    assertThat(recomputed.getLast().getFinishReason()).isEqualTo(FinishReason.FINISH_REASON_LENGTH);
    assertThat(tokens(recomputed)).containsExactly(IntStream.of(all).skip(1).boxed().toArray(Integer[]::new));
  }

  @Test
  void exposesTheEngineUnderVllmMetricNames() {
    var greedy = io.moemesh.proto.common.v1.SamplingParams.newBuilder().setIgnoreEos(true).build();
    decode.generate(request("timed", prompt(6, 11), greedy, 5)).collect().asList().await().atMost(TIMEOUT);
    String metrics = io.restassured.RestAssured.get("http://localhost:19300/q/metrics").then().statusCode(200).extract().asString();
    assertThat(metrics).contains("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
        "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:num_preemptions_total",
        "vllm:time_to_first_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket", "vllm:e2e_request_latency_seconds_bucket");
    Scrape scrape = Scrape.parse(metrics);
    assertThat(scrape.sum("vllm:request_success_total{finished_reason=\"length\"}")).isGreaterThanOrEqualTo(1);
    assertThat(scrape.sum("vllm:inter_token_latency_seconds_count")).as("4 gaps between 5 tokens").isGreaterThanOrEqualTo(4);
  }

  @Test
  void reportsItsLoad() {
    var load = decode.load(LoadReportRequest.getDefaultInstance()).await().atMost(TIMEOUT);
    assertThat(load.getMaxModelLen()).isEqualTo(512);
    assertThat(load.getKvCacheUsage()).isBetween(0.0, 1.0);
  }
}
