package io.moemesh.expert;

import io.moemesh.model.moe.Placement;
import io.moemesh.model.moe.balance.ExpertBalancer;
import io.moemesh.model.moe.balance.ShardFailover;
import io.moemesh.proto.expert.v1.ExpertLoadReport;
import io.moemesh.proto.expert.v1.ExpertRole;
import io.moemesh.proto.expert.v1.ExpertServiceInfo;
import io.moemesh.proto.expert.v1.LayerLoad;
import io.moemesh.proto.expert.v1.PlacementInUse;
import io.moemesh.proto.expert.v1.PlacementTable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Live rebalancing: one {@link #round()} per balancer interval, by the coordinating shard (routed shard 0 while
 * every shard is live), over every routed shard.
 * <pre>
 *   Info from every shard ── a shard's newest prepared version ≠ the active one ──▶ target: the active slots (repair)
 *   Load from every shard ── a version older than the active one used within `settle` ──▶ SETTLING
 *   summed load ── ExpertBalancer.rebalance(load, active) ── too few tokens, same slots, or gain < minGain ──▶ UNCHANGED
 *                                                         └─ moved ──▶ target: the new slots
 *   target, at a version never prepared before ── Prepare on every shard ── all answered ──▶ active (PUBLISHED | REPAIRED)
 *                                                                         └─ one failed ──▶ active kept (FAILED)
 * </pre>
 * Why it is safe: a shard holds the experts of its newest prepared placement and of the one before. The active
 * placement is every shard's newest before a round starts (else the round repairs that first), so during a
 * round every shard holds both the active experts and the target's; replicas switch only once every shard has
 * them; and the next round, which drops the old ones, waits until no shard has seen frames of an older version
 * for {@code settle}. A shard that failed a Prepare, or restarted with its starting placement, is re-prepared
 * with the active slots under a new version (replicas switch to that version: same slots, same results). A
 * balancer that restarted (shard 0) knows only its starting placement: it resumes the newest placement a shard has
 * prepared (Info's prepared_placement), so a restart does not undo the balancing.
 *
 * <p>Failover, one {@link #heartbeat()} per heartbeat interval (more often than rounds), on every routed shard:
 * <pre>
 *   Info from every shard, at once ── a peer publishes a newer active placement ──▶ adopted as this shard's active
 *   the lowest-numbered live shard in this view? ── no ──▶ FOLLOWING (watch only)
 *   Info from every shard ── {@code misses} in a row failed, or nothing answered for {@code silence} ──▶ lost
 *                                                      ──▶ ShardFailover.hosts: its slots hosted on live shards
 *                        └─ a lost shard answers again ──▶ back ──▶ ShardFailover.hosts: its slots home again
 *   a shard that has never answered counts as starting, unless the placement in use hosts its slots elsewhere ──▶ lost
 *   new hosts, at a version never prepared before ── Prepare on every live shard ── all answered ──▶ active (REPLACED | REHOMED)
 *                                                                                └─ one failed ──▶ active kept (FAILED), next heartbeat again
 * </pre>
 * The slot maps do not change, only the shards hosting the slots: every live shard keeps what it computed and
 * loads the lost shard's slots it now hosts from the model files, so results stay the same bits. While a shard is
 * lost or its slots are away from home, rounds do not move experts (DEGRADED).
 *
 * <p>No single coordinator: every shard runs the heartbeats, and the lowest-numbered live shard in its own view
 * coordinates (shard 0 while it answers; shard 1 once shard 0 is lost; a restarted shard 0 takes over again as soon
 * as it answers, and brings every slot home). Every shard keeps the newest placement any peer published, so the one
 * that takes over starts from what the replicas use. Under a split view two shards may both coordinate for a while;
 * it stays safe because each publishes only what every shard it sees live has prepared, versions never repeat on a
 * shard (Prepare refuses a version not above its newest, so two coordinators racing for one version cannot both
 * win; the loser tries a higher one at its next heartbeat), and replicas follow the highest published version.
 *
 * <p>Not thread-safe: one thread runs the rounds; {@link #active()} may be read from any thread.
 */
final class PlacementCoordinator {
  enum Outcome { PUBLISHED, REPAIRED, UNCHANGED, SETTLING, SKIPPED, FAILED, REPLACED, REHOMED, DEGRADED, FOLLOWING }

  /**
   * What a round did (SKIPPED: a shard did not answer or answered nonsense; SETTLING: replicas still use an older
   * placement; FAILED: a Prepare failed): the placement active after it; the balancedness of the window's summed load under the
   * placement active when the round started and under the one the balancer proposed (NaN when the round
   * stopped before the load); tokens per shard over its window (empty likewise); what happened, in words.
   */
  record Round(Outcome outcome, Placement active, double balancedness, double proposedBalancedness, long[] shardTokens, String detail) {}

  /**
   * When a round may move experts: not before frames of older placements have stopped for {@code settle}; only
   * with at least {@code minTokensPerLayer} routed tokens per MoE layer in the summed window (fewer are noise);
   * only for a rise in balancedness of at least {@code minGain}.
   */
  record Policy(Duration settle, double minGain, long minTokensPerLayer) {}

  /**
   * What a heartbeat found and did: the shards just lost (each with why it missed) and just back, by index; the
   * placement active after it; UNCHANGED, REPLACED (slots of lost shards hosted on live ones), REHOMED (slots back
   * home), FAILED (a live shard did not prepare the new hosts: the next heartbeat tries again) or FOLLOWING (a lower
   * live shard coordinates); the detail names a placement adopted from a peer.
   */
  record Heartbeat(Outcome outcome, Placement active, java.util.Map<Integer, String> lost, List<Integer> back, String detail) {}

  private static final Executor HEARTBEATS = Executors.newVirtualThreadPerTaskExecutor();
  private final List<ShardClient> shards;
  private final Policy policy;
  private final ShardLiveness liveness;
  private final Duration roundWait; // how long a heartbeat waits for answers before it decides on those it has
  private final CompletableFuture<Answer>[] inFlight; // [shard] its heartbeat call still under way, across heartbeats

  private final int self; // this shard's index
  private volatile boolean coordinating; // this shard is the lowest-numbered live one in its view (shard 0 until a heartbeat says otherwise)
  private volatile Placement active;
  private long newestVersion; // the highest version any shard holds or was asked to prepare: never reused
  private boolean fresh = true; // no round has got to a decision yet: the shards may hold a newer placement than `active`

  /**
   * @param shards every routed shard, in shard order
   * @param initial the placement the shards start with (version 0)
   */
  PlacementCoordinator(List<ShardClient> shards, Placement initial, Policy policy) {
    this(shards, initial, policy, 3, 0);
  }

  /**
   * @param misses heartbeats in a row a shard may miss before it counts as lost
   * @param self the index of the shard this coordinator runs on
   */
  PlacementCoordinator(List<ShardClient> shards, Placement initial, Policy policy, int misses, int self) {
    this(shards, initial, policy, misses, self, Duration.ofDays(1), Duration.ofSeconds(30));
  }

  /**
   * @param silence how long a shard may answer nothing while a heartbeat waits on it before it counts as lost (a hung
   *     process answers nothing, and a heartbeat that waits on it stays under way across heartbeats until its deadline)
   * @param roundWait how long a heartbeat waits for the shards' answers; one not in by then is decided on later
   */
  @SuppressWarnings("unchecked")
  PlacementCoordinator(List<ShardClient> shards, Placement initial, Policy policy, int misses, int self, Duration silence, Duration roundWait) {
    if (self < 0 || self >= shards.size()) throw new IllegalArgumentException("shard " + self + " of " + shards.size());
    this.self = self;
    this.coordinating = self == 0;
    if (shards.size() != initial.numShards())
      throw new IllegalArgumentException(shards.size() + " shards to coordinate, the placement spans " + initial.numShards());
    this.shards = List.copyOf(shards);
    this.active = initial;
    this.newestVersion = initial.version();
    this.policy = policy;
    this.liveness = new ShardLiveness(shards.size(), misses, silence);
    this.roundWait = roundWait;
    this.inFlight = new CompletableFuture[shards.size()];
  }

  /** A heartbeat's answer and when it came. */
  private record Answer(ExpertServiceInfo info, long at) {}

  /** The placement attention replicas should use: every shard holds its experts. */
  Placement active() {
    return active;
  }

  /** [shard] whether it counts as live in this shard's heartbeats' view. */
  boolean[] live() {
    return liveness.live();
  }

  /** Routed shards that count as live (heartbeats' view). */
  int liveShards() {
    return liveness.numLive();
  }

  /**
   * Asks every shard for Info at once; adopts a newer placement a peer published; when this shard coordinates (the
   * lowest-numbered live shard in this view), hosts the slots of lost shards on live ones and brings those of shards
   * back home. A shard that does not coordinate only watches, so it can take over from the placement the mesh uses.
   */
  Heartbeat heartbeat() {
    ExpertServiceInfo[] infos = new ExpertServiceInfo[shards.size()];
    String[] misses = new String[shards.size()];
    long[] at = new long[shards.size()];
    boolean[] waiting = new boolean[shards.size()]; // its call is still under way: no verdict yet, unless silent too long
    for (int s = 0; s < shards.size(); s++) { // at once: a hung shard costs one wait, not one per shard
      ShardClient shard = shards.get(s);
      if (inFlight[s] == null) inFlight[s] = CompletableFuture.supplyAsync(() -> new Answer(shard.heartbeat(), System.nanoTime()), HEARTBEATS);
    }
    long until = System.nanoTime() + roundWait.toNanos();
    for (int s = 0; s < shards.size(); s++) {
      try {
        Answer a = inFlight[s].get(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS);
        infos[s] = a.info;
        at[s] = a.at;
      } catch (ExecutionException e) {
        misses[s] = message(e.getCause());
        at[s] = System.nanoTime();
      } catch (TimeoutException e) {
        waiting[s] = true;
        continue;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        misses[s] = "interrupted";
        at[s] = System.nanoTime();
      }
      inFlight[s] = null;
    }
    var lost = new java.util.TreeMap<Integer, String>();
    List<Integer> back = new ArrayList<>();
    String adopted = "";
    for (int s = 0; s < shards.size(); s++) {
      ExpertServiceInfo info = infos[s];
      if (info != null && (info.getRole() != ExpertRole.EXPERT_ROLE_ROUTED || info.getShard() != s))
        misses[s] = "answered as " + info.getRole() + " shard " + info.getShard();
      if (waiting[s] && s != self) { // this shard runs this code: it is live in its own view
        long now = System.nanoTime();
        double silent = liveness.silentSeconds(s, now);
        if (liveness.unanswered(s, now) == ShardLiveness.Change.LOST)
          lost.put(s, String.format("silent: no answer for %.1f s, a heartbeat waiting on it", silent));
        continue;
      }
      boolean answered = misses[s] == null || s == self;
      if (answered && info != null) {
        newestVersion = Math.max(newestVersion, info.getPlacementVersion());
        if (info.hasActivePlacement()) {
          newestVersion = Math.max(newestVersion, info.getActivePlacement().getVersion());
          Placement published = resumable(info.getActivePlacement(), active);
          if (published != null && s != self) {
            active = published;
            adopted = "adopted version " + published.version() + " published by " + shards.get(s).name();
          }
        }
      }
      switch (liveness.record(s, answered, at[s] == 0 ? System.nanoTime() : at[s])) {
        case LOST -> lost.put(s, misses[s]);
        case BACK -> back.add(s);
        case NONE -> {}
      }
    }
    Placement current = active;
    for (int s = 0; s < shards.size(); s++) // a shard the placement in use already re-hosts was lost before this shard started
      if ((misses[s] != null || waiting[s]) && s != self && liveness.neverAnswered(s) && hostsNothing(current, s) && liveness.lostBeforeAnswering(s))
        lost.put(s, (waiting[s] ? "no answer yet" : misses[s]) + "; it has not answered since this shard started, and placement version " + current.version()
            + " hosts its slots elsewhere");
    boolean[] live = liveness.live();
    coordinating = coordinator(live) == self;
    if (!coordinating) return new Heartbeat(Outcome.FOLLOWING, current, lost, back, adopted);
    int[] hosts = ShardFailover.hosts(current, live);
    if (Arrays.equals(hosts, current.slotToShard())) return new Heartbeat(Outcome.UNCHANGED, current, lost, back, adopted);
    Placement target = current.hostedOn(hosts, newestVersion + 1);
    newestVersion = target.version();
    long start = System.nanoTime();
    String failures = prepare(target, live);
    if (!failures.isEmpty())
      return new Heartbeat(Outcome.FAILED, current, lost, back, "version " + target.version() + " not published: " + failures);
    active = target;
    String where = target.isHome() ? "every slot on its home shard"
        : "slots hosted " + Arrays.toString(hosts) + " (slot → shard; lost: " + lostShards(live) + ")";
    return new Heartbeat(target.isHome() ? Outcome.REHOMED : Outcome.REPLACED, target, lost, back, String.format(
        "version %d: %s, prepared on the live shards by shard %d in %.2f s", target.version(), where, self, (System.nanoTime() - start) / 1e9));
  }

  /** Whether this shard coordinates: it is the lowest-numbered live shard in its heartbeats' view. */
  boolean coordinating() {
    return coordinating;
  }

  /** The coordinator every shard with this view agrees on: the lowest-numbered live shard. */
  static int coordinator(boolean[] live) {
    for (int s = 0; s < live.length; s++) if (live[s]) return s;
    return -1;
  }

  private static boolean hostsNothing(Placement placement, int shard) {
    return Arrays.stream(placement.slotToShard()).noneMatch(host -> host == shard);
  }

  private static List<Integer> lostShards(boolean[] live) {
    List<Integer> out = new ArrayList<>();
    for (int s = 0; s < live.length; s++) if (!live[s]) out.add(s);
    return out;
  }

  Round round() {
    Placement current = active;
    if (!coordinating) return stopped(Outcome.FOLLOWING, current, "shard " + coordinator(liveness.live()) + " coordinates");
    if (!liveness.allLive() || !current.isHome()) // the heartbeats move slots until every shard is back
      return stopped(Outcome.DEGRADED, current, "routed shards " + lostShards(liveness.live()) + " are lost or their slots are away from home");
    boolean repair = false;
    PlacementTable newestPrepared = null; // a restarted balancer's candidate to resume
    for (int s = 0; s < shards.size(); s++) {
      ExpertServiceInfo info;
      try {
        info = shards.get(s).info();
      } catch (RuntimeException e) {
        return stopped(Outcome.SKIPPED, current, message(e));
      }
      if (info.getRole() != ExpertRole.EXPERT_ROLE_ROUTED || info.getShard() != s || info.getNumShards() != shards.size())
        return stopped(Outcome.SKIPPED, current, shards.get(s).name() + " is " + info.getRole() + " shard " + info.getShard() + " of "
            + info.getNumShards() + ", expected routed shard " + s + " of " + shards.size());
      newestVersion = Math.max(newestVersion, info.getPlacementVersion());
      repair |= info.getPlacementVersion() != current.version();
      if (info.hasPreparedPlacement() && (newestPrepared == null || info.getPreparedPlacement().getVersion() > newestPrepared.getVersion()))
        newestPrepared = info.getPreparedPlacement();
    }
    long[][] load = new long[current.numLayers()][];
    for (int layer = 0; layer < load.length; layer++) if (current.isMoeLayer(layer)) load[layer] = new long[current.numExperts()];
    long[] shardTokens = new long[shards.size()];
    for (int s = 0; s < shards.size(); s++) {
      ExpertLoadReport report;
      try {
        report = shards.get(s).load();
      } catch (RuntimeException e) {
        return stopped(Outcome.SKIPPED, current, message(e));
      }
      for (PlacementInUse use : report.getPlacementsInUseList())
        if (use.getPlacementVersion() < current.version() && use.getIdleMillis() < policy.settle().toMillis())
          return stopped(Outcome.SETTLING, current, shards.get(s).name() + " served placement version " + use.getPlacementVersion() + " "
              + use.getIdleMillis() + " ms ago; the active one is " + current.version());
      try {
        shardTokens[s] = add(load, report);
      } catch (IllegalArgumentException e) {
        return stopped(Outcome.SKIPPED, current, shards.get(s).name() + " reported " + e.getMessage());
      }
    }
    double before = ExpertBalancer.balancedness(load, current);
    Placement proposed = ExpertBalancer.rebalance(load, current);
    double after = ExpertBalancer.balancedness(load, proposed);
    long moeLayers = Arrays.stream(load).filter(Objects::nonNull).count(), tokens = Arrays.stream(shardTokens).sum();
    Placement target;
    String change;
    if (repair) {
      Placement resumed = fresh ? resumable(newestPrepared, current) : null; // non-null: this balancer restarted
      Placement slots = resumed != null ? resumed : current;
      target = slots.withVersion(newestVersion + 1);
      change = "version " + target.version() + " re-prepares the slots of version " + slots.version()
          + (resumed != null ? " (resumed from the shards)" : "") + " on every shard";
    } else if (tokens < policy.minTokensPerLayer() * moeLayers || PlacementTables.sameSlots(proposed, current) || after - before < policy.minGain()) {
      fresh = false;
      return new Round(Outcome.UNCHANGED, current, before, after, shardTokens,
          "balancedness " + fmt(before) + ", proposed " + fmt(after) + ", " + tokens + " routed tokens in the window");
    } else {
      target = proposed.withVersion(newestVersion + 1);
      change = "version " + target.version() + ": balancedness " + fmt(before) + " → " + fmt(after);
    }
    fresh = false; // from here on this coordinator knows what it prepared
    newestVersion = target.version();
    String failures = prepareEverywhere(target);
    if (!failures.isEmpty())
      return new Round(Outcome.FAILED, current, before, after, shardTokens, "version " + target.version() + " not published: " + failures);
    active = target;
    return new Round(repair ? Outcome.REPAIRED : Outcome.PUBLISHED, target, before, after, shardTokens, change);
  }

  /**
   * The placement a balancer resumes in its first round: the newest one a shard has prepared, if it is newer than what this
   * balancer knows and has this mesh's shape; else null. It was published unless the round that prepared it failed;
   * either way re-preparing its slots everywhere is as safe as re-preparing this balancer's own (a shard keeps its
   * newest two placements), and it keeps the balancing the replicas had.
   */
  static Placement resumable(PlacementTable newestPrepared, Placement known) {
    if (newestPrepared == null || newestPrepared.getVersion() <= known.version()) return null;
    try {
      Placement p = PlacementTables.fromProto(newestPrepared, known.numLayers());
      boolean sameShape = p.numShards() == known.numShards() && p.numExperts() == known.numExperts() && p.numSlots() == known.numSlots();
      for (int layer = 0; sameShape && layer < known.numLayers(); layer++) sameShape = p.isMoeLayer(layer) == known.isMoeLayer(layer);
      return sameShape ? p : null;
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** Prepares {@code target} on every shard at once; returns why some did not answer, or "" when all did. */
  private String prepareEverywhere(Placement target) {
    boolean[] all = new boolean[shards.size()];
    Arrays.fill(all, true);
    return prepare(target, all);
  }

  /** Prepares {@code target} on the shards {@code on} marks, at once; returns why some did not answer, or "" when all did. */
  private String prepare(Placement target, boolean[] on) {
    PlacementTable table = PlacementTables.toProto(target);
    List<String> failures = new ArrayList<>();
    try (var calls = Executors.newVirtualThreadPerTaskExecutor()) {
      List<Future<?>> answers = new ArrayList<>();
      for (int s = 0; s < shards.size(); s++) {
        if (!on[s]) continue;
        ShardClient shard = shards.get(s);
        answers.add(calls.submit(() -> {
          long version = shard.prepare(table).getPlacementVersion();
          if (version != target.version()) throw new IllegalStateException(shard.name() + " prepared version " + version);
        }));
      }
      for (Future<?> answer : answers) {
        try {
          answer.get();
        } catch (ExecutionException e) {
          failures.add(message(e.getCause()));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          failures.add("interrupted");
        }
      }
    }
    return String.join("; ", failures);
  }

  /** Adds a shard's counts to {@code load}; returns the shard's tokens. */
  private static long add(long[][] load, ExpertLoadReport report) {
    long tokens = 0;
    for (LayerLoad layer : report.getLayersList()) {
      int id = layer.getLayerId();
      if (id < 0 || id >= load.length || load[id] == null) throw new IllegalArgumentException("load for layer " + id + ", not a MoE layer");
      if (layer.getTokensPerExpertCount() != load[id].length)
        throw new IllegalArgumentException(layer.getTokensPerExpertCount() + " experts in layer " + id + ", expected " + load[id].length);
      for (int e = 0; e < load[id].length; e++) {
        long n = layer.getTokensPerExpert(e);
        if (n < 0) throw new IllegalArgumentException("negative load " + n + " in layer " + id);
        load[id][e] += n;
        tokens += n;
      }
    }
    return tokens;
  }

  private static Round stopped(Outcome outcome, Placement active, String detail) {
    return new Round(outcome, active, Double.NaN, Double.NaN, new long[0], detail);
  }

  private static String message(Throwable e) {
    return e.getMessage() != null ? e.getMessage() : e.toString();
  }

  private static String fmt(double balancedness) {
    return String.format("%.3f", balancedness);
  }

  @Override
  public String toString() {
    return "PlacementCoordinator{" + shards.size() + " shards (" + liveness.numLive() + " live), active " + active + ", newest version " + newestVersion + "}";
  }
}
