package io.moemesh.gateway;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Cache-aware prefill routing, as SGLang's router and Dynamo's KV router do it: a prefill replica keeps the KV of the
 * prompts it computed in its prefix cache, so a prompt that shares a prefix with an earlier one is cheaper where that
 * one went. The gateway remembers, per replica, the prefix blocks of the prompts it sent there — chained hashes of
 * {@code blockTokens}-token blocks, as the engine hashes its pages, at most {@code blocksPerReplica} per replica,
 * least recently used dropped first — and sends a prompt to the replica that holds its longest known prefix, unless
 * that replica has more than {@code maxImbalance} prompt tokens queued beyond the least-queued one: then load wins,
 * so a hot prefix cannot pile every request on one replica. Without a known prefix it is the least-queued replica.
 * The memory is an estimate (a replica may have evicted a block, or another gateway sent it one); a wrong guess
 * costs a recomputed prefix, never a wrong answer.
 */
final class PrefixAffinity {
  /** Why a replica was picked: the longest known prefix, or the least queued prompt tokens. */
  enum Reason { PREFIX, LOAD }

  /** A routing choice: the replica, the prompt tokens it is believed to hold already, and why it was picked. */
  record Choice(Replica replica, int matchedTokens, Reason reason) {}

  private final int blockTokens;
  private final int blocksPerReplica;
  private final long maxImbalance;
  private final Map<Replica, Blocks> known = new ConcurrentHashMap<>();

  PrefixAffinity(int blockTokens, int blocksPerReplica, long maxImbalance) {
    if (blockTokens < 1) throw new IllegalArgumentException("prefix blocks hold at least one token, got " + blockTokens);
    if (blocksPerReplica < 1) throw new IllegalArgumentException("at least one prefix block per replica is remembered, got " + blocksPerReplica);
    if (maxImbalance < 0) throw new IllegalArgumentException("the load imbalance allowed for a prefix is at least 0 tokens, got " + maxImbalance);
    this.blockTokens = blockTokens;
    this.blocksPerReplica = blocksPerReplica;
    this.maxImbalance = maxImbalance;
  }

  /** A replica's remembered blocks, least recently used first. */
  private static final class Blocks extends LinkedHashMap<Long, Boolean> {
    private final int capacity;

    Blocks(int capacity) {
      super(16, 0.75f, true);
      this.capacity = capacity;
    }

    @Override
    protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
      return size() > capacity;
    }
  }

  /** Picks a reachable replica for {@code prompt} and remembers that it will hold the prompt's blocks; empty if none is reachable. */
  Optional<Choice> pick(List<Replica> replicas, int[] prompt) {
    List<Replica> reachable = Replicas.routable(replicas);
    Optional<Replica> least = Replicas.leastQueued(reachable);
    if (least.isEmpty()) return Optional.empty();
    long[] chain = chain(prompt);
    Replica leastQueued = least.get();
    Replica best = leastQueued;
    int bestBlocks = matchedBlocks(leastQueued, chain);
    for (Replica r : reachable) {
      int blocks = matchedBlocks(r, chain);
      if (blocks > bestBlocks || blocks == bestBlocks && r.queuedPromptTokens() < best.queuedPromptTokens()) {
        best = r;
        bestBlocks = blocks;
      }
    }
    Choice choice = bestBlocks > 0 && best.queuedPromptTokens() - leastQueued.queuedPromptTokens() <= maxImbalance
        ? new Choice(best, bestBlocks * blockTokens, Reason.PREFIX)
        : new Choice(leastQueued, matchedBlocks(leastQueued, chain) * blockTokens, Reason.LOAD);
    remember(choice.replica(), chain);
    return Optional.of(choice);
  }

  /** The chained hash of each full block of {@code prompt}: block i's hash covers every token before its end. */
  long[] chain(int[] prompt) {
    long[] chain = new long[prompt.length / blockTokens];
    long h = 0x9E3779B97F4A7C15L;
    for (int b = 0; b < chain.length; b++) {
      for (int i = b * blockTokens; i < (b + 1) * blockTokens; i++) h = mix(h ^ prompt[i]);
      chain[b] = h;
    }
    return chain;
  }

  /** SplitMix64's finalizer: every input bit moves every output bit. */
  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** How many leading blocks of the chain {@code replica} is believed to hold. */
  private int matchedBlocks(Replica replica, long[] chain) {
    Blocks blocks = known.get(replica);
    if (blocks == null) return 0;
    synchronized (blocks) {
      int n = 0;
      while (n < chain.length && blocks.containsKey(chain[n])) n++;
      return n;
    }
  }

  /** A replica left the pool: its blocks are dropped. */
  void forget(Replica replica) {
    known.remove(replica);
  }

  private void remember(Replica replica, long[] chain) {
    Blocks blocks = known.computeIfAbsent(replica, r -> new Blocks(blocksPerReplica));
    synchronized (blocks) {
      for (long h : chain) blocks.put(h, Boolean.TRUE); // refreshes recency of blocks already known
    }
  }
}
