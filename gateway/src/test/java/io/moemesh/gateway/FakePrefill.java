package io.moemesh.gateway;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.common.v1.LoadReport;
import io.moemesh.proto.common.v1.LoadReportRequest;
import io.moemesh.proto.common.v1.Usage;
import io.moemesh.proto.prefill.v1.KvTicket;
import io.moemesh.proto.prefill.v1.PrefillGrpc;
import io.moemesh.proto.prefill.v1.PrefillRequest;
import io.moemesh.proto.prefill.v1.PrefillResponse;
import io.quarkus.grpc.GrpcService;
import jakarta.inject.Inject;

/** A deterministic prefill replica: the script's first token, a ticket naming the request, one sampled draw. */
@GrpcService
public class FakePrefill extends PrefillGrpc.PrefillImplBase {
  @Inject ServedModel model;

  @Override
  public void prefill(PrefillRequest request, StreamObserver<PrefillResponse> responses) {
    FakeMesh.Call call = FakeMesh.record("prefill", request);
    ((ServerCallStreamObserver<PrefillResponse>) responses).setOnCancelHandler(() -> call.cancelled().set(true));
    FakeMesh.Script script = FakeMesh.scriptFor(call.metadataRequestId());
    if (script.hangPrefill()) return; // answers never; the gateway must cancel
    int[] ids = FakeTokens.of(model.tokenizer(), script);
    Integer k = request.getSampling().hasLogprobs() ? request.getSampling().getLogprobs() : null;
    boolean finished = ids.length == 1 && script.finish() == FinishReason.FINISH_REASON_STOP;
    PrefillResponse.Builder response = PrefillResponse.newBuilder()
        .setFirstToken(FakeMesh.token(ids, 0, k, model.tokenizer().vocabSize()))
        .setSampledDraws(1)
        .setUsage(Usage.newBuilder().setPromptTokens(request.getPromptTokenIdsCount()).setCompletionTokens(1)
            .setCachedPromptTokens(script.cachedTokens()));
    if (finished) {
      response.setFinishReason(FinishReason.FINISH_REASON_STOP);
    } else {
      response.setTicket(KvTicket.newBuilder().setStoreAddress(FakeKvStore.ADDRESS).setObjectKey(ticketKey(request.getRequestId()))
          .setNumTokens(request.getPromptTokenIdsCount()));
    }
    responses.onNext(response.build());
    responses.onCompleted();
  }

  static String ticketKey(String rpcId) {
    return "kv-" + rpcId;
  }

  @Override
  public void load(LoadReportRequest request, StreamObserver<LoadReport> responses) {
    if (FakeMesh.prefillLoadUnavailable) {
      responses.onError(io.grpc.Status.UNAVAILABLE.withDescription("fake prefill down").asRuntimeException());
      return;
    }
    FakeDecode.answerLoad(responses, LoadReport.newBuilder().setQueuedPromptTokens(0).build());
  }
}
