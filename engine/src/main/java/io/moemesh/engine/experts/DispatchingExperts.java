package io.moemesh.engine.experts;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.LocalExperts;
import io.moemesh.model.moe.ExpertBackend;
import io.moemesh.model.moe.ExpertDispatch;
import io.moemesh.model.moe.Placement;
import io.moemesh.model.moe.Routing;
import io.moemesh.model.moe.balance.ReplicaPicker;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The MoE layer's experts on expert services (expert parallelism). Per layer: the hidden states are quantized
 * once (A8W8: low-bit dispatch); each assignment goes to one replica of its expert under the placement; each
 * shard gets its tokens once and its assignments in routing order; the shared experts run meanwhile (here, or
 * on a shared-expert service). The outputs come back per assignment and are added in routing order — by
 * expert id, never by arrival — with the same kernels as {@link LocalExperts}, so the result is bit-identical
 * to in-process experts whatever the placement.
 *
 * <p>A new placement is adopted at the next forward pass (a step boundary), never inside one.
 *
 * <p>Faults: a shard whose call fails counts as down for a moment. Its assignments go to another replica of
 * their expert on a live shard, now and in the layers that follow; an expert with no other replica waits for
 * a live holder: the shard itself back (restarted), or a newer placement ({@link #usePlacement}: the experts'
 * coordinator hosts a lost shard's slots on live shards) — retried every half second until the step deadline,
 * then the step fails with a message that starts with {@value #SHARD_LOSS} and names the shard. A step that
 * failed so on a placement fails at once on its next tries while that placement stays (the engine runs the step's
 * requests again one by one: each would wait the deadline again), until a newer placement arrives. A shard that
 * stops answering without failing (a hung process) is given up as soon as a newer placement hosts nothing on it, not
 * after the layer timeout: the coordinator's heartbeats find a hung shard lost within seconds.
 */
public final class DispatchingExperts implements ExpertBackend {
  /** The start of the message of a step that failed because no live shard held one of its experts. */
  public static final String SHARD_LOSS = "expert-shard loss: ";

  /** Told about retries, e.g. to count them and mark traces; called on the engine's step thread. */
  public interface RetryListener {
    RetryListener NONE = new RetryListener() {};

    /** {@code assignments} of {@code layerId} are sent again after {@code why}. */
    default void redispatched(int layerId, int assignments, String why) {}

    /** A step gave up: no live holder of an expert within the step deadline. */
    default void stepFailed(String why) {}
  }

  private final ExpertTransport transport;
  private final LocalExperts localShared; // null: the shared experts are remote
  private final boolean int8;
  private final Duration timeout;
  private final Duration stepDeadline;
  private volatile RetryListener retries = RetryListener.NONE;
  private long stepStartNanos;   // when the current forward pass began; step thread only
  private long gaveUpOnVersion = -1; // the placement a step last gave up on: later steps fail at once until it changes
  private final int firstMoeLayer;
  private volatile Placement next;
  private Placement placement; // the step's; only the step thread touches it
  private long steps;          // forward passes so far: rotates the replica choice
  private int inFlight;        // layers started and not yet finished (two with micro-batch overlap); step thread only
  private final long[] downUntil; // per shard: System.nanoTime() until which it counts as down after a failure
  private RuntimeException lastFailure;
  /** How long a failed shard is passed over (and how long a layer waits before trying it again). */
  private static final Duration DOWN_FOR = Duration.ofMillis(500);
  /** How often a layer waiting on a routed shard looks whether a newer placement gave up on that shard. */
  private static final Duration LOST_CHECK = Duration.ofMillis(50);

  /**
   * @param localShared the shared experts when they run next to attention, null when they are remote
   * @param int8 whether the experts take INT8 activations (A8W8): then hidden states travel quantized
   * @param timeout how long one layer waits for its experts
   */
  public DispatchingExperts(ExpertTransport transport, Placement placement, LocalExperts localShared, boolean int8, Duration timeout) {
    this(transport, placement, localShared, int8, timeout, timeout);
  }

  /**
   * @param timeout how long one layer waits for a shard's answer
   * @param stepDeadline how long after its start a step may retry assignments whose shard failed, waiting for a live holder
   */
  public DispatchingExperts(ExpertTransport transport, Placement placement, LocalExperts localShared, boolean int8, Duration timeout,
      Duration stepDeadline) {
    if (placement.numShards() != transport.numShards())
      throw new IllegalArgumentException("the placement spans " + placement.numShards() + " shards, the transport " + transport.numShards());
    this.transport = transport;
    this.placement = placement;
    this.next = placement;
    this.localShared = localShared;
    this.int8 = int8;
    this.timeout = timeout;
    this.stepDeadline = stepDeadline;
    this.downUntil = new long[placement.numShards()];
    int first = 0;
    while (!placement.isMoeLayer(first)) first++;
    this.firstMoeLayer = first;
  }

  /** Switches to {@code placement} from the next forward pass on; the shards must already hold its experts. */
  public void usePlacement(Placement placement) {
    if (placement.numShards() != transport.numShards())
      throw new IllegalArgumentException("the placement spans " + placement.numShards() + " shards, the transport " + transport.numShards());
    this.next = placement;
  }

  /** Where retries are reported (engine-host: metrics and trace spans). */
  public void onRetry(RetryListener listener) {
    this.retries = listener;
  }

  /** The placement forward passes use now (the next one's, once a pass has started after {@link #usePlacement}). */
  public Placement placement() {
    return next;
  }

  @Override
  public void routed(Kernels k, int layerId, Tensor out, Tensor x, Routing routing, TensorArena scratch) {
    forward(k, layerId, out, null, x, routing, scratch);
  }

  @Override
  public void shared(Kernels k, int layerId, Tensor out, Tensor x, TensorArena scratch) {
    if (localShared != null) {
      localShared.shared(k, layerId, out, x, scratch);
      return;
    }
    Hidden h = quantize(k, x, scratch);
    ExpertOutputsCopy.readInto(k, out, await(transport.shared(layerId, h.states, h.scales), "the shared experts", layerId), scratch);
  }

  @Override
  public void forward(Kernels k, int layerId, Tensor routedOut, Tensor sharedOut, Tensor x, Routing routing, TensorArena scratch) {
    start(k, layerId, routedOut, sharedOut, x, routing, scratch).finish();
  }

  /**
   * Sends the layer's dispatches (and the shared experts' call, or computes them here meanwhile); finishing the
   * returned work waits for the answers and combines them in routing order. The step's first MoE layer adopts a
   * new placement only when nothing is in flight, so a second micro-batch's first layer keeps the first's.
   */
  @Override
  public Pending start(Kernels k, int layerId, Tensor routedOut, Tensor sharedOut, Tensor x, Routing routing, TensorArena scratch) {
    if (layerId == firstMoeLayer && inFlight == 0) {
      placement = next;
      steps++;
      stepStartNanos = System.nanoTime();
    }
    Hidden h = quantize(k, x, scratch);
    CompletableFuture<ExpertOutputs> remoteShared = sharedOut != null && localShared == null
        ? transport.shared(layerId, h.states, h.scales) : null;
    ShardPlan[] plans = plan(layerId, routing, Math.toIntExact(x.numRows()));
    @SuppressWarnings("unchecked")
    CompletableFuture<ExpertOutputs>[] calls = new CompletableFuture[plans.length];
    for (int s = 0; s < plans.length; s++)
      if (plans[s] != null) calls[s] = transport.routed(s, plans[s].dispatch(layerId, placement.version(), h, scratch));
    if (sharedOut != null && localShared != null) localShared.shared(k, layerId, sharedOut, x, scratch); // overlaps the dispatch
    inFlight++;
    var sent = new Sent(layerId, routedOut, sharedOut, routing, h, plans, calls, remoteShared);
    return new Pending() {
      private boolean finished;

      @Override
      public void finish() {
        if (finished) throw new IllegalStateException("layer " + layerId + "'s experts were already finished");
        finished = true;
        inFlight--;
        combine(k, sent, scratch);
      }
    };
  }

  /** One layer's calls in flight, of one (micro-)batch: {@code remoteShared} is null without remote shared experts. */
  private record Sent(int layerId, Tensor routedOut, Tensor sharedOut, Routing routing, Hidden hidden, ShardPlan[] plans,
      CompletableFuture<ExpertOutputs>[] calls, CompletableFuture<ExpertOutputs> remoteShared) {}

  /** Waits for every shard and adds their outputs in routing order; then the remote shared experts' output. */
  private void combine(Kernels k, Sent sent, TensorArena scratch) {
    int assignments = sent.routing.tokenRows().length;
    if (assignments > 0) {
      Tensor y = scratch.allocate(DType.F32, assignments, sent.routedOut.dim(1));
      int[] failed = place(k, y, sent.plans, sent.calls, sent.layerId, scratch);
      if (failed.length > 0) redispatch(k, y, sent, failed, scratch);
      k.scatterAdd(sent.routedOut, y, scratch.ofInts(sent.routing.tokenRows(), assignments), scratch.ofFloats(sent.routing.weights(), assignments));
    }
    if (sent.remoteShared != null) ExpertOutputsCopy.readInto(k, sent.sharedOut, await(sent.remoteShared, "the shared experts", sent.layerId), scratch);
  }

  /**
   * Waits for each shard's answer and places its rows; a shard whose call fails is marked down and its
   * assignments are returned (their indices in the layer's routing), to be sent elsewhere.
   */
  private int[] place(Kernels k, Tensor y, ShardPlan[] plans, CompletableFuture<ExpertOutputs>[] calls, int layerId, TensorArena scratch) {
    int[] failed = new int[0];
    for (int s = 0; s < plans.length; s++) {
      if (plans[s] == null) continue;
      try {
        ExpertOutputsCopy.place(k, y, awaitShard(calls[s], s, layerId), plans[s].globalIndex, scratch);
      } catch (ShardFailure e) {
        downUntil[s] = System.nanoTime() + DOWN_FOR.toNanos();
        lastFailure = e;
        int at = failed.length;
        failed = java.util.Arrays.copyOf(failed, at + plans[s].globalIndex.length);
        System.arraycopy(plans[s].globalIndex, 0, failed, at, plans[s].globalIndex.length);
      }
    }
    java.util.Arrays.sort(failed);
    return failed;
  }

  /**
   * Sends the {@code failed} assignments again: to another replica on a live shard where there is one (under the
   * step's placement, or a newer one published meanwhile), else to their own shard once more (a restarted shard
   * answers), until the step deadline.
   */
  private void redispatch(Kernels k, Tensor y, Sent sent, int[] failed, TensorArena scratch) {
    long deadline = stepStartNanos + stepDeadline.toNanos();
    int n = sent.routing.tokenRows().length;
    retries.redispatched(sent.layerId, failed.length, lastFailure.getMessage());
    while (failed.length > 0) {
      Placement newest = next; // the coordinator may have hosted the lost shard's slots elsewhere since the step began
      int[] shardOf = new int[n];
      java.util.Arrays.fill(shardOf, -1);
      int orphan = -1; // an expert no live shard holds
      for (int i : failed) {
        int expert = expertOf(sent.routing, i);
        int live = liveReplica(newest, sent.layerId, expert);
        if (live < 0) live = liveReplica(placement, sent.layerId, expert);
        if (live < 0) orphan = expert;
        shardOf[i] = live >= 0 ? live : newest.shardOf(newest.slot(sent.layerId, expert, 0));
      }
      if (orphan >= 0) {
        boolean gaveUpHere = gaveUpOnVersion == newest.version();
        if (gaveUpHere || System.nanoTime() - deadline > 0) {
          gaveUpOnVersion = newest.version();
          String why = SHARD_LOSS + "no live routed shard holds expert " + orphan + " of layer " + sent.layerId + " (placement version "
              + newest.version() + ") within the step deadline of " + stepDeadline.toMillis() + " ms" + (gaveUpHere ? " (given up before)" : "")
              + "; last failure: " + lastFailure.getMessage();
          retries.stepFailed(why);
          throw new IllegalStateException(why, lastFailure);
        }
        pause(); // every holder of some expert is down: give its shard, or the coordinator, a moment
      }
      ShardPlan[] plans = plans(sent.routing, shardOf, Math.toIntExact(sent.routedOut.numRows()));
      @SuppressWarnings("unchecked")
      CompletableFuture<ExpertOutputs>[] calls = new CompletableFuture[plans.length];
      for (int s = 0; s < plans.length; s++)
        if (plans[s] != null) calls[s] = transport.routed(s, plans[s].dispatch(sent.layerId, newest.version(), sent.hidden, scratch));
      failed = place(k, y, plans, calls, sent.layerId, scratch);
      if (failed.length > 0) retries.redispatched(sent.layerId, failed.length, lastFailure.getMessage());
    }
  }

  private static int expertOf(Routing routing, int assignment) {
    int e = 0;
    while (routing.expertOffsets()[e + 1] <= assignment) e++;
    return e;
  }

  /** A shard holding {@code expert} in {@code layerId} under the step's placement that is not down, or -1. */
  private int liveReplica(int layerId, int expert) {
    return liveReplica(placement, layerId, expert);
  }

  /** A shard holding {@code expert} in {@code layerId} under {@code placement} that is not down, or -1. */
  private int liveReplica(Placement placement, int layerId, int expert) {
    for (int r = 0; r < placement.replicas(layerId, expert); r++) {
      int shard = placement.shardOf(placement.slot(layerId, expert, r));
      if (!isDown(shard)) return shard;
    }
    return -1;
  }

  private boolean isDown(int shard) {
    return downUntil[shard] - System.nanoTime() > 0;
  }

  private static void pause() {
    try {
      Thread.sleep(DOWN_FOR.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for a routed shard");
    }
  }

  /** A routed shard's call failed (transport error, error frame or timeout). */
  private static final class ShardFailure extends IllegalStateException {
    ShardFailure(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private record Hidden(Tensor states, Tensor scales) {}

  private Hidden quantize(Kernels k, Tensor x, TensorArena scratch) {
    if (!int8) return new Hidden(x, null);
    int tokens = Math.toIntExact(x.numRows());
    Tensor q = scratch.allocate(DType.I8, tokens, x.dim(1)), s = scratch.allocate(DType.F32, tokens);
    k.quantizeRows(q, s, x);
    return new Hidden(q, s);
  }

  /**
   * One shard's share of a layer: its assignments in routing order ({@code globalIndex}: their places in the
   * layer's routing), the distinct tokens they need ({@code tokens}, ascending) and, per expert, their offsets.
   */
  private record ShardPlan(int[] globalIndex, int[] tokens, int[] tokenIndex, int[] expertOffsets) {
    ExpertDispatch dispatch(int layerId, long version, Hidden h, TensorArena scratch) {
      int dim = h.states.dim(1);
      Tensor states = scratch.allocate(h.states.dtype(), tokens.length, dim);
      Tensor scales = h.scales == null ? null : scratch.allocate(DType.F32, tokens.length);
      for (int i = 0; i < tokens.length; i++) {
        states.rows(i, i + 1).copyFrom(h.states.rows(tokens[i], tokens[i] + 1));
        if (scales != null) scales.setFloat(i, h.scales.getFloat(tokens[i]));
      }
      return new ExpertDispatch(layerId, version, states, scales, expertOffsets, tokenIndex);
    }
  }

  /**
   * Which shard computes each assignment: an expert with several replicas spreads its tokens over them
   * ({@link ReplicaPicker}; all replicas hold the same weights, so the choice never changes a result).
   */
  private ShardPlan[] plan(int layerId, Routing routing, int numTokens) {
    int[] shardOf = ReplicaPicker.slots(placement, layerId, routing, steps);
    for (int e = 0; e < routing.numExperts(); e++) {
      for (int i = routing.expertOffsets()[e]; i < routing.expertOffsets()[e + 1]; i++) {
        shardOf[i] = placement.shardOf(shardOf[i]);
        if (isDown(shardOf[i])) { // around a shard that just failed, while another replica lives (or a newer placement hosts one)
          int live = liveReplica(layerId, e);
          if (live < 0) live = liveReplica(next, layerId, e);
          if (live >= 0) shardOf[i] = live;
        }
      }
    }
    return plans(routing, shardOf, numTokens);
  }

  /** The shards' plans for the assignments with {@code shardOf[i] ≥ 0}. */
  private ShardPlan[] plans(Routing routing, int[] shardOf, int numTokens) {
    int n = routing.tokenRows().length, numExperts = routing.numExperts(), shards = placement.numShards();
    int[] perShard = new int[shards];
    for (int i = 0; i < n; i++) if (shardOf[i] >= 0) perShard[shardOf[i]]++;
    ShardPlan[] plans = new ShardPlan[shards];
    int[] localIndex = new int[numTokens];
    for (int s = 0; s < shards; s++) {
      if (perShard[s] == 0) continue;
      int[] globalIndex = new int[perShard[s]], tokenIndex = new int[perShard[s]], offsets = new int[numExperts + 1];
      boolean[] used = new boolean[numTokens];
      int m = 0;
      for (int e = 0; e < numExperts; e++) {
        for (int i = routing.expertOffsets()[e]; i < routing.expertOffsets()[e + 1]; i++) {
          if (shardOf[i] != s) continue;
          globalIndex[m++] = i;
          used[routing.tokenRows()[i]] = true;
        }
        offsets[e + 1] = m;
      }
      int distinct = 0;
      for (int t = 0; t < numTokens; t++) if (used[t]) localIndex[t] = distinct++;
      int[] tokens = new int[distinct];
      for (int t = 0; t < numTokens; t++) if (used[t]) tokens[localIndex[t]] = t;
      for (int j = 0; j < m; j++) tokenIndex[j] = localIndex[routing.tokenRows()[globalIndex[j]]];
      plans[s] = new ShardPlan(globalIndex, tokens, tokenIndex, offsets);
    }
    return plans;
  }

  /**
   * Waits for routed shard {@code shard}'s answer like {@link #await}, but gives up on it as soon as a newer placement
   * hosts nothing on it: the coordinator found it lost (a hung process misses heartbeats long before the layer timeout),
   * and the assignments go to where that placement hosts them.
   */
  private ExpertOutputs awaitShard(CompletableFuture<ExpertOutputs> call, int shard, int layerId) {
    String who = "routed shard " + shard;
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Placement newest = next;
      if (newest != placement && !hostsAnything(newest, shard) && !call.isDone()) {
        call.cancel(true);
        throw new ShardFailure(who + " did not answer layer " + layerId + " and placement version " + newest.version()
            + " hosts nothing on it (the experts' coordinator found it lost)", null);
      }
      long left = deadline - System.nanoTime();
      try {
        return call.get(Math.max(0, Math.min(left, LOST_CHECK.toNanos())), TimeUnit.NANOSECONDS);
      } catch (TimeoutException e) {
        if (left > LOST_CHECK.toNanos()) continue;
        throw timedOut(call, who, layerId, e);
      } catch (ExecutionException e) {
        throw failedOn(who, layerId, e);
      } catch (InterruptedException e) {
        throw interrupted(who);
      }
    }
  }

  private static boolean hostsAnything(Placement p, int shard) {
    for (int host : p.slotToShard()) if (host == shard) return true;
    return false;
  }

  private ExpertOutputs await(CompletableFuture<ExpertOutputs> call, String who, int layerId) {
    try {
      return call.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (ExecutionException e) {
      throw failedOn(who, layerId, e);
    } catch (TimeoutException e) {
      throw timedOut(call, who, layerId, e);
    } catch (InterruptedException e) {
      throw interrupted(who);
    }
  }

  private static ShardFailure failedOn(String who, int layerId, ExecutionException e) {
    Throwable cause = e.getCause();
    return new ShardFailure(who + " failed on layer " + layerId + ": " + cause.getMessage(), cause);
  }

  private ShardFailure timedOut(CompletableFuture<ExpertOutputs> call, String who, int layerId, TimeoutException e) {
    call.cancel(true);
    return new ShardFailure(who + " did not answer layer " + layerId + " within " + timeout.toMillis() + " ms", e);
  }

  private static IllegalStateException interrupted(String who) {
    Thread.currentThread().interrupt();
    return new IllegalStateException("interrupted while waiting for " + who);
  }

  @Override
  public String toString() {
    return "DispatchingExperts{" + placement + ", shared " + (localShared == null ? "remote" : "local") + "}";
  }
}
