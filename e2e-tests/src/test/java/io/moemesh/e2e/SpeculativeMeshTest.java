package io.moemesh.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.moemesh.engine.GenerationRequest;
import io.moemesh.engine.KvConnector;
import io.moemesh.engine.LoadedEngine;
import io.moemesh.enginehost.ConfigMappings;
import io.moemesh.model.ModelConfigReader;
import io.moemesh.model.demo.DemoCheckpoint;
import io.moemesh.model.sampling.SamplingParams;
import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.decode.v1.DecodeGrpc;
import io.moemesh.proto.decode.v1.GenerateRequest;
import io.moemesh.proto.decode.v1.GenerateResponse;
import io.moemesh.proto.decode.v1.LoadFailurePolicy;
import io.moemesh.proto.prefill.v1.PrefillGrpc;
import io.moemesh.proto.prefill.v1.PrefillRequest;
import io.moemesh.proto.prefill.v1.PrefillResponse;
import io.moemesh.tokenizer.TokenizerFiles;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * MTP speculative decoding across processes on the tiny model: a prefill that speculates (2 drafts a step) stores the
 * MTP layer's KV with the prompt's and hands a greedy request's drafts over with the ticket; a speculating decode
 * replica verifies them in its first step and keeps drafting — with the greedy tokens of one plain engine. A decode
 * replica that does not speculate takes the same objects (it skips the MTP layer) and decodes them plainly.
 */
class SpeculativeMeshTest {
  @TempDir static Path workDir;
  static final Duration READY = Duration.ofMinutes(3);
  static final io.moemesh.proto.common.v1.SamplingParams GREEDY =
      io.moemesh.proto.common.v1.SamplingParams.newBuilder().setIgnoreEos(true).build();
  static Path model;
  static ServiceProcess kvStore, prefill, decode, plainDecode;
  static ManagedChannel prefillChannel, decodeChannel, plainDecodeChannel;
  static LoadedEngine reference;

  @BeforeAll
  static void startMesh() throws Exception {
    model = workDir.resolve("tiny");
    DemoCheckpoint.writeShipped("tiny", model, 11, DemoCheckpoint.Format.BF16, TokenizerFiles::write, (done, total) -> {});
    kvStore = ServiceProcess.start("kv-store", "spec-kv-store", List.of("moemesh.kv-store.max-bytes=64M"));
    List<String> engine = List.of("moemesh.engine.model-dir=" + model, "moemesh.engine.kv-cache-memory=16M", "moemesh.engine.threads=1");
    List<String> speculating = with(engine, "moemesh.engine.speculative-tokens=2");
    prefill = ServiceProcess.start("prefill-svc", "spec-prefill", with(speculating, "moemesh.prefill.kv-store=" + kvStore.grpcAddress(),
        "moemesh.engine.max-batched-tokens=16"));
    decode = ServiceProcess.start("decode-svc", "spec-decode", speculating);
    plainDecode = ServiceProcess.start("decode-svc", "spec-plain-decode", engine);
    for (ServiceProcess p : List.of(kvStore, prefill, decode, plainDecode)) p.awaitReady(READY);
    prefillChannel = ManagedChannelBuilder.forTarget(prefill.grpcAddress()).usePlaintext().build();
    decodeChannel = ManagedChannelBuilder.forTarget(decode.grpcAddress()).usePlaintext().build();
    plainDecodeChannel = ManagedChannelBuilder.forTarget(plainDecode.grpcAddress()).usePlaintext().build();
    reference = LoadedEngine.open(ConfigMappings.engine(Map.of("moemesh.engine.model-dir", model.toString(), "moemesh.engine.kv-cache-memory", "16M")),
        KvConnector.NONE, (done, total) -> {});
  }

  @AfterAll
  static void stopMesh() throws InterruptedException {
    for (ManagedChannel c : new ManagedChannel[] {prefillChannel, decodeChannel, plainDecodeChannel}) if (c != null) c.shutdownNow();
    for (ServiceProcess p : new ServiceProcess[] {plainDecode, decode, prefill, kvStore}) if (p != null) p.close();
    if (reference != null) reference.close();
  }

  static List<String> with(List<String> common, String... properties) {
    var all = new ArrayList<>(common);
    all.addAll(List.of(properties));
    return all;
  }

  static int[] prompt(long seed, int length) {
    return new SplittableRandom(seed).ints(length, 2, 1000).toArray();
  }

  record Decoded(PrefillResponse prefilled, List<Integer> tokens, GenerateResponse last) {}

  static Decoded prefillAndDecode(ManagedChannel decodeVia, String id, int[] prompt, int maxTokens) {
    var ids = IntStream.of(prompt).boxed().toList();
    var prefilled = PrefillGrpc.newBlockingStub(prefillChannel).withDeadlineAfter(60, TimeUnit.SECONDS)
        .prefill(PrefillRequest.newBuilder().setRequestId(id).addAllPromptTokenIds(ids).setSampling(GREEDY).build());
    var request = GenerateRequest.newBuilder().setRequestId(id).addAllPromptTokenIds(ids).setSampling(GREEDY).setMaxTokens(maxTokens)
        .setTicket(prefilled.getTicket()).setFirstToken(prefilled.getFirstToken()).setSampledDraws(prefilled.getSampledDraws())
        .addAllDraftTokenIds(prefilled.getDraftTokenIdsList()).setOnLoadFailure(LoadFailurePolicy.LOAD_FAILURE_POLICY_FAIL).build();
    List<Integer> tokens = new ArrayList<>(List.of(prefilled.getFirstToken().getTokenId()));
    GenerateResponse last = null;
    for (var it = DecodeGrpc.newBlockingStub(decodeVia).withDeadlineAfter(60, TimeUnit.SECONDS).generate(request); it.hasNext(); ) {
      last = it.next();
      last.getTokensList().forEach(t -> tokens.add(t.getTokenId()));
    }
    assertThat(last.getError()).isEmpty();
    assertThat(last.getFinishReason()).isEqualTo(FinishReason.FINISH_REASON_LENGTH);
    return new Decoded(prefilled, tokens, last);
  }

  static List<Integer> plain(String id, int[] prompt, int maxTokens) throws Exception {
    var params = SamplingParams.greedy().toBuilder().ignoreEos(true).build();
    return IntStream.of(reference.engine().submit(GenerationRequest.of(id, prompt, params, maxTokens)).await(Duration.ofSeconds(60)).tokenIds())
        .boxed().toList();
  }

  @Test
  void greedyOutputThroughASpeculatingPdPairIsTheOneOfAPlainEngine() throws Exception {
    int mainLayers = ModelConfigReader.read(model.resolve("config.json")).numHiddenLayers();
    double draftsBefore = metric(decode, "vllm:spec_decode_num_drafts_total");
    for (int i = 0; i < 3; i++) {
      int[] p = prompt(70 + i, 20 + 13 * i);
      Decoded d = prefillAndDecode(decodeChannel, "spec-" + i, p, 14);
      assertThat(d.tokens()).as("request %d", i).isEqualTo(plain("ref-" + i, p, 14));
      assertThat(d.prefilled().getTicket().getLayout().getNumLayers()).as("the main layers and the MTP layer").isEqualTo(mainLayers + 1);
      assertThat(d.prefilled().getDraftTokenIdsList()).as("the prefill's drafts after its first token").hasSize(2);
      assertThat(d.last().getUsage().getDraftTokens()).as("drafts verified from the first decode step").isGreaterThanOrEqualTo(2);
    }
    double drafts = metric(decode, "vllm:spec_decode_num_drafts_total") - draftsBefore;
    assertThat(drafts).as("the decode replica's verifications").isGreaterThanOrEqualTo(3);
  }

  @Test
  void aDecodeReplicaThatDoesNotSpeculateSkipsTheMtpLayer() throws Exception {
    int[] p = prompt(80, 37);
    Decoded d = prefillAndDecode(plainDecodeChannel, "plain-0", p, 10);
    assertThat(d.tokens()).isEqualTo(plain("ref-plain-0", p, 10));
    assertThat(d.last().getUsage().getDraftTokens()).isZero();
  }

  private static double metric(ServiceProcess service, String name) {
    return service.scrape().find(name).orElseThrow(() -> new AssertionError(service.name + " exports no " + name));
  }
}
