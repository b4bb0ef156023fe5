package io.moemesh.engine;

import io.moemesh.engine.kv.KvCacheManager;
import io.moemesh.engine.kv.PrefixHit;
import io.moemesh.model.sampling.SampledToken;
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
 * Single-threaded: the engine's step loop owns it.
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
  private long arrivals, preemptions;

  public Scheduler(SchedulerConfig config, KvCacheManager kv, ModelLimits limits) {
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
    var r = new Request(spec, arrivals++, limits.vocabSize());
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
      while (!kv.allocate(r.id(), null, r.numComputedTokens + n)) {
        Request victim = running.removeLast();
        preempt(victim);
        preempted.add(victim.id());
        if (victim == r) break;
      }
      if (r.status != RequestStatus.RUNNING) break; // r preempted itself: everything after it is gone too
      chunks.add(chunk(r, n));
      budget -= n;
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
        loads.add(new SchedulerOutput.KvLoad(r.id(), r.kvToImport, kv.blockTable(r.id())));
        continue;
      }
      int n = Math.min(r.numTokens() - computed, budget);
      if (!kv.allocate(r.id(), hit, computed + n)) break; // head of line waits for pages
      r.kvToImport = 0; // this cache holds at least as much of the prompt as the store
      if (r.numPreemptions == 0) r.numCachedPromptTokens = computed;
      r.numComputedTokens = computed;
      r.status = RequestStatus.RUNNING;
      waiting.remove(r);
      insertRunning(r);
      chunks.add(chunk(r, n));
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

  private ScheduledChunk chunk(Request r, int n) {
    int start = r.numComputedTokens;
    boolean reachesEnd = start + n == r.numTokens();
    int exportFrom = r.exportsKv() ? Math.min(r.numExported, start) : -1;
    if (r.exportsKv()) r.numExported = Math.max(r.numExported, start + n);
    return new ScheduledChunk(r.id(), r.tokens(start, start + n), start, r.numPromptTokens(), kv.blockTable(r.id()),
        reachesEnd ? r.sampler : null, reachesEnd ? r.history : null, exportFrom);
  }

  /**
   * A request's KV load ended: with {@code failure} null it joins the running batch with those positions
   * computed. Otherwise a stored prefix (prefill role) is computed here instead, and a prompt (decode role) follows
   * its {@link KvHandoff.OnLoadFailure} policy. Returns the request's final output if this finished it.
   */
  public Optional<RequestOutput> kvLoaded(String id, String failure) {
    if (abortedWhileLoading.remove(id)) { // the connector is done with the pages: now they can go
      kv.free(id);
      return Optional.empty();
    }
    Request r = loading.remove(id);
    if (r == null) return Optional.empty();
    int loaded = r.kvToImport;
    boolean prompt = r.importsPrompt();
    r.kvToImport = 0;
    if (failure == null) {
      r.numComputedTokens = loaded;
      if (!prompt && r.numPreemptions == 0) r.numCachedPromptTokens = loaded; // prompt tokens this engine did not compute
      r.status = RequestStatus.RUNNING;
      insertRunning(r);
      kv.cacheFullPages(r.id(), r.allTokens(), loaded);
      return Optional.empty();
    }
    if (prompt && ((KvHandoff.Import) r.spec.handoff()).onFailure() == KvHandoff.OnLoadFailure.FAIL)
      return Optional.of(finish(r, RequestStatus.FINISHED_ERROR, "the prompt's KV could not be loaded: " + failure));
    kv.free(r.id()); // computed here, like any local prompt
    r.status = RequestStatus.WAITING;
    waiting.add(r);
    return Optional.empty();
  }

  private void preempt(Request r) {
    kv.free(r.id());
    r.numComputedTokens = 0;
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
      boolean inPrompt = r.numComputedTokens < r.numPromptTokens(); // only prompt pages are cached: a decode chunk adds none
      r.numComputedTokens += chunk.numTokens();
      if (inPrompt) kv.cacheFullPages(r.id(), r.allTokens(), Math.min(r.numComputedTokens, r.numPromptTokens()));
      if (!chunk.samples()) continue;
      r.append(token);
      RequestStatus stop = stopStatus(r, token.tokenId());
      outputs.add(stop != null ? finish(r, stop, null) : r.output());
    }
    return outputs;
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
