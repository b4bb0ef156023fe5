package io.moemesh.enginehost;

import io.moemesh.engine.EngineStats;
import io.moemesh.engine.RequestStatus;
import io.moemesh.engine.Usage;
import io.moemesh.model.sampling.SampledToken;
import io.moemesh.model.sampling.SamplingParams;
import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.common.v1.LoadReport;
import io.moemesh.proto.common.v1.TokenLogprob;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;

/** Wire messages to engine values and back; bad values become IllegalArgumentException with the wire name. */
public final class ProtoMapping {
  private ProtoMapping() {}

  public static SamplingParams sampling(io.moemesh.proto.common.v1.SamplingParams p) {
    var b = SamplingParams.greedy().toBuilder()
        .temperature(p.getTemperature())
        .topP(p.getTopP() == 0 ? 1.0 : p.getTopP()) // proto3 default 0 = unset
        .topK(p.getTopK())
        .minP(p.getMinP())
        .presencePenalty(p.getPresencePenalty())
        .frequencyPenalty(p.getFrequencyPenalty())
        .repetitionPenalty(p.getRepetitionPenalty() == 0 ? 1.0 : p.getRepetitionPenalty())
        .stopTokenIds(new HashSet<>(p.getStopTokenIdsList()))
        .ignoreEos(p.getIgnoreEos())
        .logitBias(p.getLogitBiasMap());
    if (p.hasSeed()) b.seed(p.getSeed());
    if (p.hasLogprobs()) b.logprobs(p.getLogprobs());
    return b.build();
  }

  public static SampledToken token(io.moemesh.proto.common.v1.SampledToken t) {
    Optional<SampledToken.Logprobs> logprobs = t.hasLogprob()
        ? Optional.of(new SampledToken.Logprobs(t.getLogprob(),
            t.getTopLogprobsList().stream().map(l -> new SampledToken.TokenLogprob(l.getTokenId(), l.getLogprob())).toList()))
        : Optional.empty();
    return new SampledToken(t.getTokenId(), logprobs);
  }

  public static io.moemesh.proto.common.v1.SampledToken token(SampledToken t) {
    var b = io.moemesh.proto.common.v1.SampledToken.newBuilder().setTokenId(t.tokenId());
    t.logprobs().ifPresent(l -> {
      b.setLogprob(l.logprob());
      for (var top : l.top()) b.addTopLogprobs(TokenLogprob.newBuilder().setTokenId(top.tokenId()).setLogprob(top.logprob()));
    });
    return b.build();
  }

  public static List<io.moemesh.proto.common.v1.SampledToken> tokens(List<SampledToken> tokens) {
    return tokens.stream().map(ProtoMapping::token).toList();
  }

  public static FinishReason finishReason(RequestStatus s) {
    return switch (s) {
      case FINISHED_STOPPED -> FinishReason.FINISH_REASON_STOP;
      case FINISHED_LENGTH -> FinishReason.FINISH_REASON_LENGTH;
      case FINISHED_ABORTED -> FinishReason.FINISH_REASON_ABORT;
      case FINISHED_ERROR -> FinishReason.FINISH_REASON_ERROR;
      case WAITING, WAITING_FOR_REMOTE_KV, RUNNING, PREEMPTED -> FinishReason.FINISH_REASON_UNSPECIFIED;
    };
  }

  public static io.moemesh.proto.common.v1.Usage usage(Usage u) {
    return io.moemesh.proto.common.v1.Usage.newBuilder().setPromptTokens(u.promptTokens())
        .setCompletionTokens(u.completionTokens()).setCachedPromptTokens(u.cachedPromptTokens())
        .setDraftTokens(u.draftTokens()).setAcceptedDraftTokens(u.acceptedDraftTokens()).build();
  }

  public static LoadReport loadReport(EngineStats s, int maxModelLen) {
    return LoadReport.newBuilder().setNumWaiting(s.numWaiting()).setNumRunning(s.numRunning()).setNumLoadingKv(s.numLoadingKv())
        .setQueuedPromptTokens(s.queuedPromptTokens()).setKvCacheUsage(s.kvCache().usage()).setMaxModelLen(maxModelLen).build();
  }

  /** A Drain call's timeout: the request's, else the replica's configured one; a negative one is the caller's error. */
  public static java.time.Duration drainTimeout(io.moemesh.proto.common.v1.DrainRequest r, java.time.Duration configured) {
    if (!r.hasTimeout()) return configured;
    var t = java.time.Duration.ofSeconds(r.getTimeout().getSeconds(), r.getTimeout().getNanos());
    if (t.isNegative()) throw new IllegalArgumentException("timeout must not be negative, got " + t);
    return t;
  }

  public static io.moemesh.proto.common.v1.DrainResponse drained(Drain.Result r) {
    return io.moemesh.proto.common.v1.DrainResponse.newBuilder().setFinished(r.finished()).setCutOff(r.cutOff()).build();
  }
}
