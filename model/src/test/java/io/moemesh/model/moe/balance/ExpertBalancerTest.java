package io.moemesh.model.moe.balance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.moemesh.model.moe.Placement;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** {@link ExpertBalancer}: a worked example by hand, then properties over random loads. */
class ExpertBalancerTest {

  /**
   * Layer 0 dense; layers 1 and 2 with 6 experts on 2 shards × 4 slots (2 redundant slots), previous version 3.
   *
   * <pre>
   * layer 1, load [10 20 30 40 50 90]
   *   replicate: e5 90 is hottest → 2 copies of 45; then e4 50 → 2 copies of 25
   *   pack (heaviest first; shard loads s0/s1 after each step):
   *     e5 45 → s0 (tie, lower id)              45/0
   *     e5 45 → s1 (no e5 there)                45/45
   *     e3 40 → s0 (tie, lower id)              85/45
   *     e2 30 → s1                              85/75
   *     e4 25 → s1                              85/100
   *     e4 25 → s0 (s1 holds e4 and is fuller)  110/100
   *     e1 20 → s1, now full                    110/120
   *     e0 10 → s0, the only room               120/120
   *   slots, ascending within a shard: s0 [0 3 4 5], s1 [1 2 4 5]
   *
   * layer 2, load [100 60 35 25 15 5]
   *   replicate: e0 100 → 2 × 50; then e1 60 (> 50) → 2 × 30
   *     e0 50 → s0 50/0;  e0 50 → s1 50/50;  e2 35 → s0 85/50;  e1 30 → s1 85/80
   *     e1 30 → s0 115/80: s1 is lighter but already holds e1 — the preference decides
   *     e3 25 → s1 115/105;  e4 15 → s1 115/120 (full);  e5 5 → s0 120/120
   *   slots: s0 [0 1 2 5], s1 [0 1 3 4]
   *
   * layer 3, load [20 20 20 20 20 20]
   *   replicate: all tie at 20 → e0, then e1 (fewer copies wins the tie) → 2 × 10 each
   *     e2 20 → s0, e3 → s1, e4 → s0, e5 → s1 (40/40), e0 10 → s0, e0 → s1, e1 → s0, e1 → s1: 60/60
   *   slots [0 1 2 4 | 0 1 3 5]
   *
   * against Placement.initial (slots [0 1 2 3 | 4 5 0 1], e0 and e1 twice):
   *   layer 1: s0 = 10/2 + 20/2 + 30 + 40 = 85, s1 = 50 + 90 + 5 + 10 = 155   → the new slots (max 120)
   *   layer 2: s0 = 50 + 30 + 35 + 25 = 140,   s1 = 15 + 5 + 50 + 30 = 100   → the new slots (max 120)
   *   layer 3: s0 = 10 + 10 + 20 + 20 = 60,    s1 = 60                       → no better: keeps [0 1 2 3 | 4 5 0 1]
   *   balancedness before (120 + 120 + 60) / (155 + 140 + 60) = 300 / 355; after 300 / 300 = 1
   * </pre>
   */
  @Nested
  class WorkedExample {
    final long[][] load = {null, {10, 20, 30, 40, 50, 90}, {100, 60, 35, 25, 15, 5}, {20, 20, 20, 20, 20, 20}};
    final Placement initial = Placement.initial(new boolean[] {false, true, true, true}, 6, 2, 2).withVersion(3);

    @Test
    void placesReplicasAsComputedByHand() {
      Placement p = ExpertBalancer.rebalance(load, 2, 4, 3);
      assertThat(p.version()).isEqualTo(4);
      assertThat(p.isMoeLayer(0)).isFalse();
      assertThat(p.physicalToLogical(1)).containsExactly(0, 3, 4, 5, 1, 2, 4, 5);
      assertThat(p.physicalToLogical(2)).containsExactly(0, 1, 2, 5, 0, 1, 3, 4);
      assertThat(p.physicalToLogical(3)).containsExactly(0, 1, 2, 4, 0, 1, 3, 5);
    }

    @Test
    void aLayerNoBetterBalancedKeepsItsSlots() {
      Placement p = ExpertBalancer.rebalance(load, initial);
      assertThat(p.version()).isEqualTo(4);
      assertThat(p.physicalToLogical(1)).containsExactly(0, 3, 4, 5, 1, 2, 4, 5);
      assertThat(p.physicalToLogical(2)).containsExactly(0, 1, 2, 5, 0, 1, 3, 4);
      assertThat(p.physicalToLogical(3)).containsExactly(0, 1, 2, 3, 4, 5, 0, 1);
    }

    @Test
    void replicatesTheHottestPerCopy() {
      assertThat(ExpertBalancer.replicate(load[1], 8)).containsExactly(1, 1, 1, 1, 2, 2);
      assertThat(ExpertBalancer.replicate(load[2], 8)).containsExactly(2, 2, 1, 1, 1, 1);
    }

    @Test
    void balancednessBeforeAndAfter() {
      assertThat(ExpertBalancer.shardLoads(load[1], initial, 1)).containsExactly(85, 155);
      assertThat(ExpertBalancer.shardLoads(load[2], initial, 2)).containsExactly(140, 100);
      assertThat(ExpertBalancer.shardLoads(load[3], initial, 3)).containsExactly(60, 60);
      assertThat(ExpertBalancer.balancedness(load, initial)).isCloseTo(300.0 / 355, within(1e-12));
      assertThat(ExpertBalancer.balancedness(load, ExpertBalancer.rebalance(load, initial))).isEqualTo(1.0);
    }
  }

  /** Where loads tie — an idle layer above all — copies and slots still spread. */
  @Nested
  class Ties {
    @Test
    void idleExpertsShareTheSpareSlotsInIdOrder() {
      // all per-copy loads are 0: the tie goes to the expert with fewer copies, then the lower id
      assertThat(ExpertBalancer.replicate(new long[5], 8)).containsExactly(2, 2, 2, 1, 1);
    }

    @Test
    void idleExpertsFillTheEmptierShardFirst() {
      // 4 idle experts on 3 shards × 2 slots, copies [2 2 1 1]; shard loads all 0, so: fewer copies of the
      // expert, then fewer slots used, then lower id. e0 → s0, e0 → s1, e1 → s2 (empty), e1 → s0 (s2 holds e1),
      // e2 → s1 (s0 full), e3 → s2
      assertThat(ExpertBalancer.rebalance(new long[][] {new long[4]}, 3, 2, 0).physicalToLogical(0)).containsExactly(0, 1, 0, 2, 1, 3);
    }
  }

  @Nested
  class Properties {
    static final int CASES = 300;

    @Test
    void everyExpertHoldsASlotAndTheSlotsAreTheReplicas() {
      for (int seed = 0; seed < CASES; seed++) {
        Case c = Case.random(seed);
        Placement p = c.rebalance();
        assertThat(p.numSlots()).isEqualTo(c.numShards * c.slotsPerShard);
        for (int layer : c.moeLayers()) {
          int[] replicas = ExpertBalancer.replicate(c.load[layer], p.numSlots());
          for (int e = 0; e < c.numExperts; e++)
            assertThat(p.replicas(layer, e)).as("case %d layer %d expert %d", seed, layer, e).isEqualTo(replicas[e]).isPositive();
        }
      }
    }

    @Test
    void slotsWithinAShardAscend() {
      for (int seed = 0; seed < CASES; seed++) {
        Case c = Case.random(seed);
        Placement p = c.rebalance();
        for (int layer : c.moeLayers())
          for (int shard = 0; shard < c.numShards; shard++)
            assertThat(Arrays.copyOfRange(p.physicalToLogical(layer), shard * c.slotsPerShard, (shard + 1) * c.slotsPerShard))
                .as("case %d layer %d shard %d", seed, layer, shard).isSorted();
      }
    }

    /** A heavier expert never has fewer copies; and each extra copy was needed: without it, that expert would be the bottleneck. */
    @Test
    void replicasGoToTheHeaviestPerCopy() {
      for (int seed = 0; seed < CASES; seed++) {
        Case c = Case.random(seed);
        for (int layer : c.moeLayers()) {
          long[] load = c.load[layer];
          int[] replicas = ExpertBalancer.replicate(load, c.numShards * c.slotsPerShard);
          double maxPerCopy = 0;
          for (int e = 0; e < load.length; e++) maxPerCopy = Math.max(maxPerCopy, (double) load[e] / replicas[e]);
          for (int a = 0; a < load.length; a++) {
            if (replicas[a] > 1)
              assertThat((double) load[a] / (replicas[a] - 1)).as("case %d: copy of %d needed", seed, a).isGreaterThanOrEqualTo(maxPerCopy);
            for (int b = 0; b < load.length; b++)
              if (load[a] > load[b]) assertThat(replicas[a]).as("case %d: %d heavier than %d", seed, a, b).isGreaterThanOrEqualTo(replicas[b]);
          }
        }
      }
    }

    @Test
    void copiesOfAnExpertSpreadOverShards() {
      for (int seed = 0; seed < CASES; seed++) {
        Case c = Case.random(seed);
        Placement p = c.rebalance();
        for (int layer : c.moeLayers())
          for (int e = 0; e < c.numExperts; e++) {
            int[] perShard = new int[c.numShards];
            for (int slot : p.slotsOf(layer, e)) perShard[p.shardOf(slot)]++;
            int fewest = Arrays.stream(perShard).min().orElseThrow(), most = Arrays.stream(perShard).max().orElseThrow();
            String what = "case " + seed + " layer " + layer + " expert " + e + ": " + Arrays.toString(perShard);
            if (p.replicas(layer, e) <= c.numShards) assertThat(most).as(what).isEqualTo(1);
            else assertThat(most - fewest).as(what).isLessThanOrEqualTo(1);
          }
      }
    }

    /** The guard keeps it ≥; the balancer itself must do better wherever the initial placement is poor. */
    @Test
    void skewedLoadIsBetterBalancedThanOnTheInitialPlacement() {
      int poor = 0;
      for (int seed = 0; seed < CASES; seed++) {
        Case c = Case.skewed(seed);
        Placement before = Placement.initial(c.isMoe(), c.numExperts, c.numShards, c.numShards * c.slotsPerShard - c.numExperts);
        double b = ExpertBalancer.balancedness(c.load, before), a = ExpertBalancer.balancedness(c.load, ExpertBalancer.rebalance(c.load, before));
        assertThat(a).as("case %d: before %.3f", seed, b).isGreaterThanOrEqualTo(b).isLessThanOrEqualTo(1.0);
        if (b < 0.9) {
          poor++;
          assertThat(a).as("case %d: before %.3f", seed, b).isGreaterThan(b);
        }
      }
      assertThat(poor).as("cases with a poor initial placement").isGreaterThan(CASES / 3);
    }

    @Test
    void neverLessBalancedThanThePreviousPlacementLayerByLayer() {
      for (int seed = 0; seed < CASES; seed++) {
        Case c = Case.random(seed);
        long[][] otherLoad = Case.random(seed).load; // same shape and draws; scramble it into another load
        for (long[] row : otherLoad) if (row != null) Case.shuffle(row, new SplittableRandom(seed + 1000));
        Placement previous = ExpertBalancer.rebalance(otherLoad, c.numShards, c.slotsPerShard, 6);
        Placement next = ExpertBalancer.rebalance(c.load, previous);
        assertThat(next.version()).isEqualTo(previous.version() + 1).isEqualTo(8);
        for (int layer : c.moeLayers()) {
          double before = Arrays.stream(ExpertBalancer.shardLoads(c.load[layer], previous, layer)).max().orElseThrow();
          double after = Arrays.stream(ExpertBalancer.shardLoads(c.load[layer], next, layer)).max().orElseThrow();
          assertThat(after).as("case %d layer %d", seed, layer).isLessThanOrEqualTo(before);
        }
      }
    }

    @Test
    void sameLoadGivesTheSamePlacementAndLeavesTheLoadAlone() {
      for (int seed = 0; seed < CASES; seed++) {
        Case c = Case.random(seed);
        long[][] copy = Arrays.stream(c.load).map(row -> row == null ? null : row.clone()).toArray(long[][]::new);
        Placement first = c.rebalance();
        assertThat(c.load).isDeepEqualTo(copy);
        assertThat(ExpertBalancer.rebalance(copy, c.numShards, c.slotsPerShard, 0)).isEqualTo(first);
      }
    }
  }

  @Nested
  class Balancedness {
    @Test
    void isMeanOverMaxOfTheShardsTokensSummedOverLayers() {
      // 3 experts on 2 shards × 2 slots: [e0 e1 | e2 e0]; e0's 40 tokens split 20 + 20
      Placement p = Placement.of(0, 2, 3, new int[][] {{0, 1, 2, 0}, {0, 1, 2, 0}});
      long[][] load = {{40, 10, 70}, {0, 0, 0}};
      assertThat(ExpertBalancer.shardLoads(load[0], p, 0)).containsExactly(30, 90);
      assertThat(ExpertBalancer.balancedness(load, p)).isCloseTo(60.0 / 90, within(1e-12));
      assertThat(ExpertBalancer.balancedness(new long[][] {{0, 0, 0}, {0, 0, 0}}, p)).isEqualTo(1.0);
    }
  }

  @Nested
  class Rejects {
    @Test
    void tooFewSlotsForTheExperts() {
      assertThatThrownBy(() -> ExpertBalancer.rebalance(new long[][] {{1, 2, 3, 4, 5}}, 2, 2, 0))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("4 slots cannot hold 5 experts");
    }

    @Test
    void loadWhoseLayersDifferFromThePreviousPlacement() {
      Placement previous = Placement.initial(new boolean[] {false, true}, 4, 2, 0);
      assertThatThrownBy(() -> ExpertBalancer.rebalance(new long[][] {{1, 2, 3, 4}, {1, 2, 3, 4}}, previous))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("layer 0 has load but is not a MoE layer");
    }

    @Test
    void negativeLoad() {
      assertThatThrownBy(() -> ExpertBalancer.replicate(new long[] {1, -1}, 2)).hasMessageContaining("expert 1 has negative load");
    }
  }

  /** A random balancing problem: 1–3 layers (some dense), 1–40 experts, 1–8 shards, up to 4 spare slots per shard. */
  record Case(long[][] load, int numExperts, int numShards, int slotsPerShard) {
    static Case random(long seed) {
      return of(new SplittableRandom(seed), false);
    }

    /**
     * Zipf-like: expert of rank k gets ∝ 1/k^1.2 tokens, ranks shuffled; ≥ 2 experts per shard and at most one
     * spare slot per shard beyond rounding, as deployed (with many spare slots, the initial placement already
     * splits every expert over the shards and greedy packing need not beat it).
     */
    static Case skewed(long seed) {
      return of(new SplittableRandom(seed), true);
    }

    private static Case of(SplittableRandom rng, boolean skewed) {
      int numShards = rng.nextInt(1, 9), numExperts = rng.nextInt(skewed ? 2 * numShards : 1, 41);
      int slotsPerShard = (numExperts + numShards - 1) / numShards + rng.nextInt(0, skewed ? 2 : 5);
      long[][] load = new long[rng.nextInt(1, 4)][];
      for (int layer = 0; layer < load.length; layer++) {
        if (layer > 0 && rng.nextInt(3) == 0) continue; // dense; layer 0 stays MoE so there is one
        load[layer] = new long[numExperts];
        for (int e = 0; e < numExperts; e++)
          load[layer][e] = skewed ? (long) (100_000 / Math.pow(e + 1, 1.2))
              : rng.nextInt(4) == 0 ? 0 : rng.nextLong(0, rng.nextBoolean() ? 10 : 1_000_000);
        if (skewed) shuffle(load[layer], rng);
      }
      return new Case(load, numExperts, numShards, slotsPerShard);
    }

    Placement rebalance() {
      return ExpertBalancer.rebalance(load, numShards, slotsPerShard, 0);
    }

    int[] moeLayers() {
      return java.util.stream.IntStream.range(0, load.length).filter(l -> load[l] != null).toArray();
    }

    boolean[] isMoe() {
      boolean[] moe = new boolean[load.length];
      for (int l = 0; l < load.length; l++) moe[l] = load[l] != null;
      return moe;
    }

    static void shuffle(long[] a, SplittableRandom rng) {
      for (int i = a.length - 1; i > 0; i--) {
        int j = rng.nextInt(i + 1);
        long t = a[i];
        a[i] = a[j];
        a[j] = t;
      }
    }
  }
}
