package io.moemesh.engine;

import io.moemesh.engine.kv.KvCacheManager;
import io.moemesh.engine.kv.PrefixHit;
import io.moemesh.model.sampling.SampledToken;
import io.moemesh.model.sampling.Sampler;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

/**
 * Decides who runs how many tokens each step (continuous batching); never does math.
 * <ol>
 *   <li>Running requests, in policy order, each get their pending tokens (one for a decode, the rest of the
 *       prompt for a chunked prefill) up to the step's token budget. A request that needs a page when none
 *       is free preempts the last request in policy order (recompute: its pages are freed and it waits again),
 *       possibly itself.
 *   <li>If nobody was preempted, waiting requests are admitted in policy order — after the first, preferring
 *       its length bucket — while budget, running slots and pages last. A new prompt first adopts the cached
 *       pages of its longest cached prefix. A prompt chunk that does not reach the end samples nothing.
 * </ol>
 * With speculative decoding ({@code speculativeTokens} k &gt; 0, MTP), a decoding request that has drafts runs them
 * after its last token (up to k, within the budget, {@code max_tokens} and the context), and a chunk that samples
 * holds pages for k − 1 positions more, where the chained MTP passes write. {@link #update} then advances the
 * request by its accepted drafts plus one token, appends them token by token (stopping at the first stop), and
 * hands the pages past its tokens back (rejected drafts leave nothing behind).
 *
 * <p>Single-threaded: the engine's step loop owns it.
 */
public final class Scheduler {
  private final SchedulerConfig config;
  private final KvCacheManager kv;
  private final ModelLimits limits;
  private final int maxTokensPerRequest; // the context length, or the whole cache if smaller
  private final Comparator<Request> order;
  private final TreeSet<Request> waiting;
  private final List<Request> running = new ArrayList<>(); // kept in policy order
  private final Map<String, Request> loading = new HashMap<>(); // WAITING_FOR_REMOTE_KV: pages reserved, KV arriving
  private final java.util.Set<String> abortedWhileLoading = new java.util.HashSet<>(); // pages held until the load ends
  private final Map<String, Request> requests = new HashMap<>();
  private final int speculativeTokens; // k, 0 = off
  private long arrivals, preemptions;
  private long numDrafts, numDraftTokens, numAcceptedTokens;
  private final long[] acceptedPerPosition;

  public Scheduler(SchedulerConfig config, KvCacheManager kv, ModelLimits limits) {
    this(config, kv, limits, 0);
  }

  /** @param speculativeTokens draft tokens per request and step (MTP speculative decoding), 0 = off */
  public Scheduler(SchedulerConfig config, KvCacheManager kv, ModelLimits limits, int speculativeTokens) {
    if (speculativeTokens < 0) throw new IllegalArgumentException("speculative tokens must be ≥ 0 (0 = off), got " + speculativeTokens);
    this.speculativeTokens = speculativeTokens;
    this.acceptedPerPosition = new long[speculativeTokens];
    this.config = config;
    this.kv = kv;
    this.limits = limits;
    this.maxTokensPerRequest = (int) Math.min(limits.maxModelLen(), (long) kv.numPages() * kv.pageSize());
    Comparator<Request> fcfs = Comparator.comparingLong(r -> r.arrivalOrder);
    this.order = config.policy() == SchedulerConfig.Policy.PRIORITY
        ? Comparator.<Request>comparingInt(r -> r.spec.priority()).thenComparing(fcfs) : fcfs;
    this.waiting = new TreeSet<>(order);
  }

  /**
   * Queues a request.
   *
   * @throws IllegalArgumentException with a message for the client when it can never run: a duplicate id,
   *     a token outside the vocabulary, a prompt longer than the context, a bad sampling parameter
   */
  public void add(GenerationRequest spec) {
    if (requests.containsKey(spec.id())) throw new IllegalArgumentException("request id " + spec.id() + " is already in use");
    validate(spec);
    var r = new Request(spec, arrivals++, limits.vocabSize(), speculativeTokens);
    requests.put(spec.id(), r);
    waiting.add(r);
  }

  /** The checks of {@link #add} that need no queue state, safe to call from any thread. */
  public void validate(GenerationRequest spec) {
    for (int t : spec.promptTokenIds())
      if (t < 0 || t >= limits.vocabSize())
        throw new IllegalArgumentException("request " + spec.id() + ": prompt token id " + t + " is outside the vocabulary [0, " + limits.vocabSize() + ")");
    if (spec.numPromptTokens() > maxTokensPerRequest)
      throw new IllegalArgumentException("request " + spec.id() + ": the prompt has " + spec.numPromptTokens()
          + " tokens but the context holds at most " + maxTokensPerRequest);
    spec.sampling().validateFor(limits.vocabSize());
    if (spec.handoff() instanceof KvHandoff.Import i)
      for (int t : i.drafts())
        if (t < 0 || t >= limits.vocabSize())
          throw new IllegalArgumentException("request " + spec.id() + ": draft token id " + t + " is outside the vocabulary [0, " + limits.vocabSize() + ")");
  }

  public boolean hasRequests() {
    return !requests.isEmpty();
  }

  /** Requests a step could run now (false while every request is only waiting for its KV to arrive). */
  public boolean hasWork() {
    return !waiting.isEmpty() || !running.isEmpty();
  }

  public int numLoadingKv() {
    return loading.size();
  }

  public int numWaiting() {
    return waiting.size();
  }

  public int numRunning() {
    return running.size();
  }

  /** Prompt tokens still to compute across waiting requests (the prefill autoscaling signal). */
  public long numQueuedPromptTokens() {
    return waiting.stream().mapToLong(Request::numPendingTokens).sum();
  }

  /** Preemptions so far ({@code vllm:num_preemptions_total}). */
  public long numPreemptions() {
    return preemptions;
  }

  /** Speculative decoding's counters so far. */
  public SpecDecodeStats specDecodeStats() {
    return new SpecDecodeStats(numDrafts, numDraftTokens, numAcceptedTokens, acceptedPerPosition);
  }

  public Optional<RequestStatus> status(String id) {
    return Optional.ofNullable(requests.get(id)).map(r -> r.status);
  }

  public SchedulerOutput schedule() {
    int budget = config.maxBatchedTokens();
    List<ScheduledChunk> chunks = new ArrayList<>();
    List<String> preempted = new ArrayList<>();
    for (int i = 0; i < running.size() && budget > 0; i++) {
      Request r = running.get(i);
      int n = Math.min(r.numPendingTokens(), budget);
      List<Sampler.Draft> drafts = draftsToVerify(r, n, budget);
      int lookahead = lookahead(r, n);
      if ((!drafts.isEmpty() || lookahead > 0) && !kv.allocate(r.id(), null, slots(r.numComputedTokens + n + drafts.size(), lookahead))) {
        drafts = List.of(); // no room to speculate: a plain step (which may preempt)
      }
      while (!kv.allocate(r.id(), null, r.numComputedTokens + n)) {
        Request victim = running.removeLast();
        preempt(victim);
        preempted.add(victim.id());
        if (victim == r) break;
      }
      if (r.status != RequestStatus.RUNNING) break; // r preempted itself: everything after it is gone too
      chunks.add(chunk(r, n, drafts));
      budget -= n + drafts.size();
    }
    List<SchedulerOutput.KvLoad> loads = new ArrayList<>();
    if (preempted.isEmpty()) admit(budget, chunks, loads);
    return new SchedulerOutput(chunks, preempted, loads);
  }

  private void admit(int budget, List<ScheduledChunk> chunks, List<SchedulerOutput.KvLoad> loads) {
    int bucket = -1;
    while (budget > 0 && running.size() + loading.size() < config.maxRunningRequests() && !waiting.isEmpty()) {
      Request r = nextWaiting(bucket);
      PrefixHit hit = kv.holds(r.id()) || r.importsPrompt() ? null
          : kv.findPrefix(r.allTokens(), Math.min(r.numPromptTokens(), r.numTokens() - 1));
      int computed = hit == null ? r.numComputedTokens : hit.numPages() * kv.pageSize();
      if (r.importsPrompt() || r.kvToImport > computed) { // the connector brings the prompt (decode) or a longer prefix (prefill)
        if (!kv.allocate(r.id(), null, r.importsPrompt() ? r.numTokens() : r.kvToImport)) break; // decode: the first token too
        r.status = RequestStatus.WAITING_FOR_REMOTE_KV;
        waiting.remove(r);
        loading.put(r.id(), r);
        loads.add(new SchedulerOutput.KvLoad(r.id(), r.kvToImport, kv.blockTable(r.id()), r.importsPrompt() && r.keepsMtpKv));
        continue;
      }
      int n = Math.min(r.numTokens() - computed, budget);
      int lookahead = computed + n == r.numTokens() ? lookahead(r, n + computed - r.numComputedTokens) : 0;
      boolean withLookahead = lookahead > 0 && kv.allocate(r.id(), hit, slots(computed + n, lookahead));
      if (!withLookahead && !kv.allocate(r.id(), hit, computed + n)) break; // head of line waits for pages
      r.kvToImport = 0; // this cache holds at least as much of the prompt as the store
      if (r.numPreemptions == 0) r.numCachedPromptTokens = computed;
      r.numComputedTokens = computed;
      r.status = RequestStatus.RUNNING;
      waiting.remove(r);
      insertRunning(r);
      chunks.add(chunk(r, n, List.of()));
      budget -= n;
      if (bucket < 0) bucket = lengthBucket(r);
    }
  }

  /** The first waiting request in policy order, or after the first admission the first of its length bucket. */
  private Request nextWaiting(int bucket) {
    if (config.lengthBuckets() && bucket >= 0)
      for (Request r : waiting) if (lengthBucket(r) == bucket) return r;
    return waiting.first();
  }

  private static int lengthBucket(Request r) {
    return 32 - Integer.numberOfLeadingZeros(Math.max(1, r.numPendingTokens()) - 1);
  }

  /**
   * The drafts a decode chunk of {@code n} tokens verifies: the request's proposal, cut to the step's budget and so that
   * every accepted token fits {@code max_tokens} and the context (a step emits at most drafts + 1 tokens).
   */
  private List<Sampler.Draft> draftsToVerify(Request r, int n, int budget) {
    if (r.drafts.isEmpty() || r.numComputedTokens + n != r.numTokens()) return List.of();
    int room = Math.min(Math.min(budget - n, r.spec.maxTokens() - r.numOutputTokens() - 1), maxTokensPerRequest - r.numTokens() - 1);
    return r.drafts.subList(0, Math.clamp(room, 0, r.drafts.size()));
  }

  /** Positions past a sampling chunk that its chained MTP passes write: k − 1 for a request that proposes drafts. */
  private int lookahead(Request r, int n) {
    return r.drafter != null && r.numComputedTokens + n == r.numTokens() ? speculativeTokens - 1 : 0;
  }

  private int slots(int numTokens, int lookahead) {
    return Math.max(numTokens, Math.min(numTokens + lookahead, maxTokensPerRequest));
  }

  private ScheduledChunk chunk(Request r, int n, List<Sampler.Draft> drafts) {
    int start = r.numComputedTokens;
    boolean reachesEnd = start + n == r.numTokens();
    int exportFrom = r.exportsKv() ? Math.min(r.numExported, start) : -1;
    if (r.exportsKv()) r.numExported = Math.max(r.numExported, start + n);
    int[] tokens = r.tokens(start, start + n);
    ScheduledChunk.Speculation speculation = null;
    if (r.keepsMtpKv) {
      tokens = java.util.Arrays.copyOf(tokens, n + drafts.size());
      for (int i = 0; i < drafts.size(); i++) tokens[n + i] = drafts.get(i).tokenId();
      boolean proposes = reachesEnd && r.drafter != null;
      speculation = new ScheduledChunk.Speculation(drafts, reachesEnd ? -1 : r.tokens(start + n, start + n + 1)[0],
          proposes ? speculativeTokens : 0, proposes ? r.drafter : null);
    }
    return new ScheduledChunk(r.id(), tokens, start, r.numPromptTokens(), kv.blockTable(r.id()),
        reachesEnd ? r.sampler : null, reachesEnd ? r.history : null, exportFrom, speculation);
  }

  /**
   * A request's KV load ended: once {@link KvLoadResult.Loaded} it joins the running batch with those positions
   * computed. Otherwise a stored prefix (prefill role) is computed here instead, and a prompt (decode role) follows
   * its {@link KvHandoff.OnLoadFailure} policy. Returns the request's final output if this finished it.
   */
  public Optional<RequestOutput> kvLoaded(String id, KvLoadResult result) {
    if (abortedWhileLoading.remove(id)) { // the connector is done with the pages: now they can go
      kv.free(id);
      return Optional.empty();
    }
    Request r = loading.remove(id);
    if (r == null) return Optional.empty();
    int loaded = r.kvToImport;
    boolean prompt = r.importsPrompt();
    r.kvToImport = 0;
    switch (result) {
      case KvLoadResult.Loaded() -> {
        r.numComputedTokens = loaded;
        if (!prompt && r.numPreemptions == 0) r.numCachedPromptTokens = loaded; // prompt tokens this engine did not compute
        r.status = RequestStatus.RUNNING;
        insertRunning(r);
        kv.cacheFullPages(r.id(), r.allTokens(), loaded);
        return Optional.empty();
      }
      case KvLoadResult.Failed(_, var detail) -> {
        if (prompt && ((KvHandoff.Import) r.spec.handoff()).onFailure() == KvHandoff.OnLoadFailure.FAIL)
          return Optional.of(finish(r, RequestStatus.FINISHED_ERROR, "the prompt's KV could not be loaded: " + detail));
        kv.free(r.id()); // computed here, like any local prompt
        r.status = RequestStatus.WAITING;
        waiting.add(r);
        return Optional.empty();
      }
    }
  }

  private void preempt(Request r) {
    kv.free(r.id());
    r.numComputedTokens = 0;
    r.drafts = List.of();
    r.numPreemptions++;
    preemptions++;
    r.status = RequestStatus.PREEMPTED;
    waiting.add(r);
  }

  private void insertRunning(Request r) {
    int i = running.size();
    while (i > 0 && order.compare(running.get(i - 1), r) > 0) i--;
    running.add(i, r);
  }

  /** Applies a step's results: advances progress, appends sampled tokens, finishes requests that stop. */
  public List<RequestOutput> update(SchedulerOutput plan, RunnerOutput out) {
    List<RequestOutput> outputs = new ArrayList<>();
    for (ScheduledChunk chunk : plan.chunks()) {
      Request r = requests.get(chunk.requestId());
      if (r == null || r.status != RequestStatus.RUNNING) continue; // finished or aborted meanwhile
      String failure = out.failed().get(r.id());
      SampledToken token = out.sampled().get(r.id());
      if (failure == null && chunk.samples() && token == null) failure = "the model runner returned no token";
      if (failure != null) {
        outputs.add(finish(r, RequestStatus.FINISHED_ERROR, failure));
        continue;
      }
      int drafts = chunk.numDraftTokens();
      List<SampledToken> accepted = out.acceptedOf(r.id());
      if (accepted.size() > drafts) {
        outputs.add(finish(r, RequestStatus.FINISHED_ERROR, "the model runner accepted " + accepted.size() + " of " + drafts + " drafts"));
        continue;
      }
      boolean inPrompt = r.numComputedTokens < r.numPromptTokens(); // only prompt pages are cached: a decode chunk adds none
      r.numComputedTokens += chunk.numTokens() - drafts + accepted.size(); // rejected drafts' KV is dropped
      if (drafts > 0) countVerification(r, drafts, accepted.size());
      if (!chunk.samples()) {
        if (inPrompt) kv.cacheFullPages(r.id(), r.allTokens(), Math.min(r.numComputedTokens, r.numPromptTokens()));
        continue;
      }
      RequestStatus stop = null;
      for (int i = 0; i <= accepted.size() && stop == null; i++) { // token by token: nothing after a stop
        SampledToken t = i < accepted.size() ? accepted.get(i) : token;
        r.append(t);
        stop = stopStatus(r, t.tokenId());
      }
      if (inPrompt) kv.cacheFullPages(r.id(), r.allTokens(), Math.min(r.numComputedTokens, r.numPromptTokens())); // knows the next token
      if (stop != null) {
        if (r.exportsKv()) r.drafts = out.drafts().getOrDefault(r.id(), List.of()); // handed over with the ticket
        outputs.add(finish(r, stop, null));
        continue;
      }
      if (speculativeTokens > 0) {
        r.drafts = out.drafts().getOrDefault(r.id(), List.of());
        kv.trim(r.id(), r.numTokens());
      }
      outputs.add(r.output());
    }
    return outputs;
  }

  private void countVerification(Request r, int drafts, int accepted) {
    r.numDraftTokens += drafts;
    r.numAcceptedDraftTokens += accepted;
    numDrafts++;
    numDraftTokens += drafts;
    numAcceptedTokens += accepted;
    for (int i = 0; i < accepted && i < acceptedPerPosition.length; i++) acceptedPerPosition[i]++;
  }

  private RequestStatus stopStatus(Request r, int tokenId) {
    var p = r.spec.sampling();
    if (p.stopTokenIds().contains(tokenId) || (!p.ignoreEos() && limits.isEos(tokenId))) return RequestStatus.FINISHED_STOPPED;
    if (r.numOutputTokens() >= r.spec.maxTokens() || r.numTokens() >= maxTokensPerRequest) return RequestStatus.FINISHED_LENGTH;
    return null;
  }

  /** Aborts a request in any state, freeing its pages at once; empty if the id is unknown or already finished. */
  public Optional<RequestOutput> abort(String id) {
    Request r = requests.get(id);
    return r == null ? Optional.empty() : Optional.of(finish(r, RequestStatus.FINISHED_ABORTED, null));
  }

  /** Finishes a request with {@link RequestStatus#FINISHED_ERROR}, leaving every other request as it was. */
  public Optional<RequestOutput> fail(String id, String message) {
    Request r = requests.get(id);
    return r == null ? Optional.empty() : Optional.of(finish(r, RequestStatus.FINISHED_ERROR, message));
  }

  private RequestOutput finish(Request r, RequestStatus status, String error) {
    if (loading.remove(r.id()) != null) abortedWhileLoading.add(r.id()); // the connector may still write its pages
    else kv.free(r.id());
    r.status = status;
    r.error = error;
    running.remove(r);
    waiting.remove(r);
    requests.remove(r.id());
    return r.output();
  }
}
