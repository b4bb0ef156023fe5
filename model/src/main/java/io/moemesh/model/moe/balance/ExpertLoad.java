package io.moemesh.model.moe.balance;

import io.moemesh.model.moe.Routing;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Tokens per routed expert per MoE layer over a sliding window: the input of {@link ExpertBalancer}.
 *
 * <p>The window is a ring of {@code windowBuckets} buckets; {@link #record} adds to the current one and
 * {@link #advance()} moves to the next, clearing what it held, so a {@link #snapshot()} covers the current
 * (partial) bucket and the {@code windowBuckets − 1} before it. Whoever calls {@code advance} sets the unit:
 * a timer every T seconds gives a window of about {@code windowBuckets · T}; the step loop every K steps gives
 * one of {@code windowBuckets · K} steps. Keeping the clock out keeps this class a plain, testable counter.
 *
 * <p>Thread-safe: {@code record} is lock-free (one atomic add per expert with tokens) and may run on any number
 * of threads; {@code advance} and {@code snapshot} are serialized with each other. A record that races with
 * {@code advance} counts in the bucket it started in (with one bucket, it may be cleared with it).
 */
public final class ExpertLoad {
  private final int numExperts;
  private final int[] layerToRow;          // [layerId] → row in a bucket, −1 for dense layers
  private final int numMoeLayers;
  private final AtomicLongArray[] buckets; // [bucket] of (numMoeLayers · numExperts) counters, row-major
  private volatile int current;

  /**
   * @param moeLayers true for each layerId that is a MoE layer
   * @param windowBuckets buckets in the window, ≥ 1 (1: everything since the last {@link #advance()})
   */
  public ExpertLoad(boolean[] moeLayers, int numExperts, int windowBuckets) {
    if (numExperts < 1 || windowBuckets < 1) throw new IllegalArgumentException("need ≥ 1 expert and ≥ 1 bucket");
    this.numExperts = numExperts;
    this.layerToRow = new int[moeLayers.length];
    int rows = 0;
    for (int layer = 0; layer < moeLayers.length; layer++) layerToRow[layer] = moeLayers[layer] ? rows++ : -1;
    this.numMoeLayers = rows;
    this.buckets = new AtomicLongArray[windowBuckets];
    for (int b = 0; b < windowBuckets; b++) buckets[b] = new AtomicLongArray(rows * numExperts);
  }

  /** Adds {@code counts[expert]} tokens to each expert of {@code layerId}. */
  public void record(int layerId, int[] counts) {
    if (counts.length != numExperts) throw new IllegalArgumentException(counts.length + " counts for " + numExperts + " experts");
    AtomicLongArray bucket = buckets[current];
    int base = row(layerId) * numExperts;
    for (int e = 0; e < numExperts; e++)
      if (counts[e] != 0) bucket.getAndAdd(base + e, counts[e]);
  }

  /** Adds a batch's routed tokens of {@code layerId}: {@code routing.count(e)} to each expert {@code e}. */
  public void record(int layerId, Routing routing) {
    if (routing.numExperts() != numExperts)
      throw new IllegalArgumentException("routing over " + routing.numExperts() + " experts, counting " + numExperts);
    AtomicLongArray bucket = buckets[current];
    int base = row(layerId) * numExperts;
    for (int e = 0; e < numExperts; e++)
      if (routing.count(e) != 0) bucket.getAndAdd(base + e, routing.count(e));
  }

  /** Adds {@code tokens} to one expert of {@code layerId}. */
  public void add(int layerId, int expert, long tokens) {
    if (expert < 0 || expert >= numExperts) throw new IllegalArgumentException("expert " + expert + " not in [0, " + numExperts + ")");
    buckets[current].getAndAdd(row(layerId) * numExperts + expert, tokens);
  }

  /** Starts a new bucket, dropping the oldest one's counts from the window. */
  public synchronized void advance() {
    int next = (current + 1) % buckets.length;
    AtomicLongArray bucket = buckets[next];
    for (int i = 0; i < bucket.length(); i++) bucket.set(i, 0);
    current = next;
  }

  /** Tokens per expert over the window: [layerId][expert], null rows for dense layers. */
  public synchronized long[][] snapshot() {
    long[][] load = new long[layerToRow.length][];
    for (int layer = 0; layer < layerToRow.length; layer++) {
      int row = layerToRow[layer];
      if (row < 0) continue;
      load[layer] = new long[numExperts];
      for (AtomicLongArray bucket : buckets)
        for (int e = 0; e < numExperts; e++) load[layer][e] += bucket.get(row * numExperts + e);
    }
    return load;
  }

  public int numExperts() {
    return numExperts;
  }

  public int windowBuckets() {
    return buckets.length;
  }

  private int row(int layerId) {
    int row = layerId >= 0 && layerId < layerToRow.length ? layerToRow[layerId] : -1;
    if (row < 0) throw new IllegalArgumentException("layer " + layerId + " is not a MoE layer (" + numMoeLayers + " are counted)");
    return row;
  }
}
