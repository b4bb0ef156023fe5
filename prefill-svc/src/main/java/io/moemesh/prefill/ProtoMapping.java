package io.moemesh.prefill;

import io.moemesh.engine.EngineStats;
import io.moemesh.engine.Usage;
import io.moemesh.model.sampling.SampledToken;
import io.moemesh.model.sampling.SamplingParams;
import io.moemesh.proto.common.v1.LoadReport;
import io.moemesh.proto.common.v1.TokenLogprob;
import java.util.HashSet;

/**
 * Wire messages to engine values and back (the prefill subset of decode-svc's mapping: each service generates its
 * own stubs from the proto jar, so the mapping cannot live in a shared module yet).
 */
final class ProtoMapping {
  private ProtoMapping() {}

  static SamplingParams sampling(io.moemesh.proto.common.v1.SamplingParams p) {
    var b = SamplingParams.greedy().toBuilder()
        .temperature(p.getTemperature())
        .topP(p.getTopP() == 0 ? 1.0 : p.getTopP()) // proto3 default 0 = unset
        .topK(p.getTopK())
        .minP(p.getMinP())
        .presencePenalty(p.getPresencePenalty())
        .frequencyPenalty(p.getFrequencyPenalty())
        .repetitionPenalty(p.getRepetitionPenalty() == 0 ? 1.0 : p.getRepetitionPenalty())
        .stopTokenIds(new HashSet<>(p.getStopTokenIdsList()))
        .ignoreEos(p.getIgnoreEos());
    if (p.hasSeed()) b.seed(p.getSeed());
    if (p.hasLogprobs()) b.logprobs(p.getLogprobs());
    return b.build();
  }

  static io.moemesh.proto.common.v1.SampledToken token(SampledToken t) {
    var b = io.moemesh.proto.common.v1.SampledToken.newBuilder().setTokenId(t.tokenId());
    t.logprobs().ifPresent(l -> {
      b.setLogprob(l.logprob());
      for (var top : l.top()) b.addTopLogprobs(TokenLogprob.newBuilder().setTokenId(top.tokenId()).setLogprob(top.logprob()));
    });
    return b.build();
  }

  static io.moemesh.proto.common.v1.Usage usage(Usage u) {
    return io.moemesh.proto.common.v1.Usage.newBuilder().setPromptTokens(u.promptTokens())
        .setCompletionTokens(u.completionTokens()).setCachedPromptTokens(u.cachedPromptTokens()).build();
  }

  static LoadReport loadReport(EngineStats s, int maxModelLen) {
    return LoadReport.newBuilder().setNumWaiting(s.numWaiting()).setNumRunning(s.numRunning()).setNumLoadingKv(s.numLoadingKv())
        .setQueuedPromptTokens(s.queuedPromptTokens()).setKvCacheUsage(s.kvCache().usage()).setMaxModelLen(maxModelLen).build();
  }
}
