package io.moemesh.engine;

import io.moemesh.model.sampling.SampledToken;
import io.moemesh.model.sampling.Sampler;
import io.moemesh.model.sampling.TokenCounts;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The engine's state of one request (see {@link RequestStatus} for its life). Owned by the step loop; the
 * runner sees only the {@link ScheduledChunk}s made from it.
 */
final class Request {
  final GenerationRequest spec;
  final long arrivalOrder;
  final Sampler sampler;
  final TokenCounts history; // prompt + output, for the penalties
  RequestStatus status = RequestStatus.WAITING;
  int numComputedTokens;
  int numCachedPromptTokens;
  int numPreemptions;
  int kvToImport; // positions whose KV comes from the connector: the prompt (decode), a stored prefix (prefill); 0 after a failed load
  int numExported; // prefill role: positions [0, numExported) were handed to the connector
  String error;
  final boolean keepsMtpKv; // speculative decoding: the MTP layer's KV is computed (or imported) for every position
  final Sampler drafter; // speculative decoding's draft sampler (its own random stream), or null when this request does not propose
  List<Sampler.Draft> drafts = List.of(); // proposed after the last token, to verify in the next step
  int numDraftTokens, numAcceptedDraftTokens; // verified and accepted so far, for its usage
  private int[] tokens; // prompt then output; the first numTokens are valid
  private int numTokens;
  private final List<SampledToken> unsent = new ArrayList<>();

  Request(GenerationRequest spec, long arrivalOrder, int vocabSize) {
    this(spec, arrivalOrder, vocabSize, 0);
  }

  /**
   * @param speculativeTokens the engine's drafts per step (0 = off). With them, a request keeps the MTP layer's KV
   *     unless it imports a prompt without it, and proposes drafts where it keeps that KV — in the prefill role only
   *     when greedy, as only greedy drafts are handed over ({@link KvHandoff.Import})
   */
  Request(GenerationRequest spec, long arrivalOrder, int vocabSize, int speculativeTokens) {
    this.spec = spec;
    this.arrivalOrder = arrivalOrder;
    this.sampler = new Sampler(spec.sampling(), vocabSize);
    this.history = TokenCounts.ofPrompt(spec.promptTokenIds());
    this.tokens = Arrays.copyOf(spec.promptTokenIds(), spec.numPromptTokens() + Math.min(spec.maxTokens(), 256));
    this.numTokens = spec.numPromptTokens();
    this.keepsMtpKv = speculativeTokens > 0 && !(spec.handoff() instanceof KvHandoff.Import i && !i.withMtpKv());
    boolean proposes = keepsMtpKv && !(spec.handoff() instanceof KvHandoff.Export && !spec.sampling().isGreedy());
    this.drafter = proposes ? new Sampler(drafterParams(spec.sampling()), vocabSize) : null;
    switch (spec.handoff()) {
      case KvHandoff.Import imported -> {
        kvToImport = spec.numPromptTokens();
        appendPrior(imported.firstToken());
        sampler.skipDraws(imported.sampledDraws());
        if (proposes && spec.sampling().isGreedy()) // one-hot drafts: verifying a sampled draft needs its distribution
          drafts = imported.drafts().stream().limit(speculativeTokens).map(id -> new Sampler.Draft(id, null, 1)).toList();
      }
      case KvHandoff.Export export -> kvToImport = export.prefixTokens();
      case KvHandoff.Local local -> { }
    }
  }

  /** The request's sampling parameters with a random stream of the drafts' own, derived from its seed. */
  private static io.moemesh.model.sampling.SamplingParams drafterParams(io.moemesh.model.sampling.SamplingParams p) {
    return p.seed() == null ? p : p.toBuilder().seed(p.seed() * 0x9E3779B97F4A7C15L + 0x2545F4914F6CDD1DL).build();
  }

  boolean exportsKv() {
    return spec.handoff() instanceof KvHandoff.Export;
  }

  /** Decode role: the whole prompt's KV comes from the connector. */
  boolean importsPrompt() {
    return spec.handoff() instanceof KvHandoff.Import && kvToImport > 0;
  }

  String id() {
    return spec.id();
  }

  int numTokens() {
    return numTokens;
  }

  int numPromptTokens() {
    return spec.numPromptTokens();
  }

  int numOutputTokens() {
    return numTokens - spec.numPromptTokens();
  }

  /** Tokens still to run through the model before the next sample. */
  int numPendingTokens() {
    return numTokens - numComputedTokens;
  }

  int[] tokens(int from, int to) {
    return Arrays.copyOfRange(tokens, from, to);
  }

  /** The prompt and output so far (a copy). */
  int[] allTokens() {
    return Arrays.copyOf(tokens, numTokens);
  }

  void append(SampledToken token) {
    appendPrior(token);
    unsent.add(token);
  }

  /** An output token that was streamed elsewhere (the prefill's first token). */
  private void appendPrior(SampledToken token) {
    if (numTokens == tokens.length) tokens = Arrays.copyOf(tokens, tokens.length * 2);
    tokens[numTokens++] = token.tokenId();
    history.addGenerated(token.tokenId());
  }

  /** Tokens appended since the last call. */
  List<SampledToken> drainUnsent() {
    List<SampledToken> out = List.copyOf(unsent);
    unsent.clear();
    return out;
  }

  Usage usage() {
    return new Usage(numPromptTokens(), numOutputTokens(), numCachedPromptTokens, numDraftTokens, numAcceptedDraftTokens);
  }

  RequestOutput output() {
    List<Integer> handover = exportsKv() && status == RequestStatus.FINISHED_LENGTH ? drafts.stream().map(Sampler.Draft::tokenId).toList() : List.of();
    return new RequestOutput(id(), drainUnsent(), status, usage(), error, handover);
  }
}
