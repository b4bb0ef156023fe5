package io.moemesh.gateway;

import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.common.v1.LoadReport;
import io.moemesh.proto.common.v1.LoadReportRequest;
import io.moemesh.proto.common.v1.Usage;
import io.moemesh.proto.decode.v1.DecodeGrpc;
import io.moemesh.proto.decode.v1.GenerateRequest;
import io.moemesh.proto.decode.v1.GenerateResponse;
import io.quarkus.grpc.GrpcService;
import jakarta.inject.Inject;

/**
 * A deterministic decode replica. Without a ticket it generates the script's tokens from the first; with one it
 * checks the ticket and first token against what the fake prefill handed out and continues from the second.
 */
@GrpcService
public class FakeDecode extends DecodeGrpc.DecodeImplBase {
  @Inject ServedModel model;

  @Override
  public void generate(GenerateRequest request, StreamObserver<GenerateResponse> responses) {
    FakeMesh.Call call = FakeMesh.record("decode", request);
    var serverStream = (ServerCallStreamObserver<GenerateResponse>) responses;
    serverStream.setOnCancelHandler(() -> call.cancelled().set(true));
    FakeMesh.Script script = FakeMesh.scriptFor(call.metadataRequestId());
    if (script.decodeStatus() != null) {
      responses.onError(script.decodeStatus().asRuntimeException());
      return;
    }
    if (FakeMesh.calls(call.metadataRequestId(), "decode").size() <= script.unavailableDecodes()) {
      responses.onError(Status.UNAVAILABLE.withDescription("fake replica going down").asRuntimeException());
      return;
    }
    int[] ids = FakeTokens.of(model.tokenizer(), script);
    int start = request.hasTicket() ? 1 : 0;
    if (request.hasTicket() && !ticketMatches(request, ids)) {
      responses.onError(Status.FAILED_PRECONDITION.withDescription("ticket or first token mismatch").asRuntimeException());
      return;
    }
    script.decodeGate().thenRun(() -> {
      call.decodeStarted().set(true);
      stream(request, ids, start, script, serverStream);
    });
  }

  private static boolean ticketMatches(GenerateRequest request, int[] ids) {
    return request.getTicket().getObjectKey().equals(FakePrefill.ticketKey(request.getRequestId()))
        && request.getFirstToken().getTokenId() == ids[0] && request.getSampledDraws() == 1;
  }

  private void stream(GenerateRequest request, int[] ids, int start, FakeMesh.Script script,
      ServerCallStreamObserver<GenerateResponse> out) {
    Integer k = request.getSampling().hasLogprobs() ? request.getSampling().getLogprobs() : null;
    int end = Math.min(ids.length, request.getMaxTokens());
    for (int i = start; i < end && !out.isCancelled(); i++) {
      if (script.errorAfter() >= 0 && i >= script.errorAfter()) {
        out.onNext(GenerateResponse.newBuilder().setFinishReason(FinishReason.FINISH_REASON_ERROR)
            .setError("fake decode failure").build());
        out.onCompleted();
        return;
      }
      GenerateResponse.Builder message = GenerateResponse.newBuilder()
          .addTokens(FakeMesh.token(ids, i, k, model.tokenizer().vocabSize()));
      boolean last = i == end - 1;
      if (last && !script.hang()) {
        message.setFinishReason(end == ids.length ? script.finish() : FinishReason.FINISH_REASON_LENGTH)
            .setUsage(Usage.newBuilder().setPromptTokens(request.getPromptTokenIdsCount()).setCompletionTokens(end)
                .setCachedPromptTokens(script.cachedTokens()));
      }
      out.onNext(message.build());
    }
    if (!script.hang() && !out.isCancelled()) out.onCompleted();
  }

  @Override
  public void load(LoadReportRequest request, StreamObserver<LoadReport> responses) {
    answerLoad(responses, LoadReport.newBuilder().setKvCacheUsage(FakeMesh.decodeKvUsage).setNumRunning(1).setMaxModelLen(512).build());
  }

  static void answerLoad(StreamObserver<LoadReport> responses, LoadReport report) {
    if (FakeMesh.loadUnavailable) {
      responses.onError(Status.UNAVAILABLE.withDescription("fake replica down").asRuntimeException());
      return;
    }
    responses.onNext(report);
    responses.onCompleted();
  }
}
