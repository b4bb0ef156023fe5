package io.moemesh.decode;

import static io.moemesh.decode.DecodeServiceTest.TIMEOUT;
import static io.moemesh.decode.DecodeServiceTest.prompt;
import static io.moemesh.decode.DecodeServiceTest.request;
import static io.moemesh.telemetry.testing.InMemorySpans.awaitSpan;
import static io.moemesh.telemetry.testing.InMemorySpans.named;
import static io.moemesh.telemetry.testing.Scrape.metric;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.moemesh.engine.GenerationRequest;
import io.moemesh.engine.LoadedEngine;
import io.moemesh.enginehost.telemetry.GenAiAttributes;
import io.moemesh.enginehost.testing.TinyCheckpointResource;
import io.moemesh.model.sampling.SamplingParams;
import io.moemesh.proto.common.v1.LoadReportRequest;
import io.moemesh.proto.common.v1.SampledToken;
import io.moemesh.proto.common.v1.Usage;
import io.moemesh.proto.decode.v1.Decode;
import io.moemesh.proto.decode.v1.GenerateResponse;
import io.moemesh.telemetry.testing.Scrape;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.quarkus.grpc.GrpcClient;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import jakarta.inject.Inject;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * decode-svc with MTP speculative decoding on (2 drafts a step): greedy output equals the engine's without it, and the
 * drafts show in {@code vllm:spec_decode_*} on /q/metrics and in the request's usage and span.
 */
@QuarkusTest
@TestProfile(DecodeSpeculationTest.Speculating.class)
@QuarkusTestResource(TinyCheckpointResource.class)
class DecodeSpeculationTest {
  static final int HTTP_PORT = DecodeObservabilityTest.HTTP_PORT;

  public static final class Speculating implements QuarkusTestProfile {
    @Override
    public Map<String, String> getConfigOverrides() {
      return Map.of("moemesh.engine.speculative-tokens", "2");
    }
  }

  @GrpcClient("decode")
  Decode decode;

  @Inject InMemorySpanExporter spans;

  @BeforeEach
  void awaitReady() {
    await().atMost(TIMEOUT).ignoreExceptions().until(() -> decode.load(LoadReportRequest.getDefaultInstance()).await().atMost(TIMEOUT) != null);
  }

  @Test
  void greedyOutputIsTheEnginesWithoutDraftsAndTheDraftsAreCounted() throws Exception {
    double drafts = metric(HTTP_PORT, "vllm:spec_decode_num_drafts_total");
    double draftTokens = metric(HTTP_PORT, "vllm:spec_decode_num_draft_tokens_total");
    double accepted = metric(HTTP_PORT, "vllm:spec_decode_num_accepted_tokens_total");
    int[] p = prompt(31, 17);
    var greedy = io.moemesh.proto.common.v1.SamplingParams.newBuilder().setIgnoreEos(true).build();
    List<GenerateResponse> stream = decode.generate(request("spec", p, greedy, 24)).collect().asList().await().atMost(TIMEOUT);

    int[] expected;
    try (LoadedEngine reference = TinyCheckpointResource.reference()) { // speculation off
      expected = reference.engine().submit(GenerationRequest.of("ref", p, SamplingParams.greedy().toBuilder().ignoreEos(true).build(), 24))
          .await(TIMEOUT).tokenIds();
    }
    assertThat(stream.stream().flatMap(r -> r.getTokensList().stream()).mapToInt(SampledToken::getTokenId).toArray()).isEqualTo(expected);

    Usage usage = stream.getLast().getUsage();
    assertThat(usage.getDraftTokens()).as("23 tokens after the first: 15 drafts even if every one were right").isGreaterThanOrEqualTo(15);
    assertThat(usage.getAcceptedDraftTokens()).isBetween(0, usage.getDraftTokens());

    double newDrafts = metric(HTTP_PORT, "vllm:spec_decode_num_drafts_total") - drafts;
    double newDraftTokens = metric(HTTP_PORT, "vllm:spec_decode_num_draft_tokens_total") - draftTokens;
    double newAccepted = metric(HTTP_PORT, "vllm:spec_decode_num_accepted_tokens_total") - accepted;
    assertThat(newDraftTokens).as("this test's requests run alone").isEqualTo(usage.getDraftTokens());
    assertThat(newAccepted).isEqualTo(usage.getAcceptedDraftTokens());
    assertThat(newDrafts).isBetween(newDraftTokens / 2, newDraftTokens);
    double atFirst = metric(HTTP_PORT, "vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"tiny\",position=\"0\"}");
    double atSecond = metric(HTTP_PORT, "vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"tiny\",position=\"1\"}");
    assertThat(atFirst + atSecond).as("acceptance by position adds up").isEqualTo(metric(HTTP_PORT, "vllm:spec_decode_num_accepted_tokens_total"));
    assertThat(atSecond).as("acceptance is a prefix").isLessThanOrEqualTo(atFirst);
    String body = Scrape.of(HTTP_PORT).text();
    assertThat(body).contains("vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"tiny\",position=\"1\"}")
        .doesNotContain("vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"tiny\",position=\"2\"}");

    SpanData span = awaitSpan(spans, named("decode tiny", GenAiAttributes.RESPONSE_ID, "spec"));
    assertThat(span.getAttributes().get(GenAiAttributes.SPEC_DECODE_DRAFT_TOKENS)).isEqualTo((long) usage.getDraftTokens());
    assertThat(span.getAttributes().get(GenAiAttributes.SPEC_DECODE_ACCEPTED_TOKENS)).isEqualTo((long) usage.getAcceptedDraftTokens());
  }
}
