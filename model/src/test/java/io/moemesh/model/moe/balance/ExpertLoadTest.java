package io.moemesh.model.moe.balance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.kernels.TensorArena;
import io.moemesh.model.moe.Routing;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** {@link ExpertLoad}: a sliding window of per-expert token counts. */
class ExpertLoadTest {
  static final boolean[] LAYERS = {false, true, true}; // layer 0 dense

  @Nested
  class Window {
    @Test
    void snapshotSumsTheBucketsStillInTheWindow() {
      var load = new ExpertLoad(LAYERS, 3, 2);
      load.record(1, new int[] {1, 0, 2});
      load.advance();
      load.record(1, new int[] {10, 0, 0});
      load.add(2, 1, 5);
      assertThat(load.snapshot()).isDeepEqualTo(new long[][] {null, {11, 0, 2}, {0, 5, 0}});
      load.advance(); // the first bucket leaves the window
      load.record(1, new int[] {0, 100, 0});
      assertThat(load.snapshot()).isDeepEqualTo(new long[][] {null, {10, 100, 0}, {0, 5, 0}});
      load.advance();
      load.advance();
      assertThat(load.snapshot()).isDeepEqualTo(new long[][] {null, {0, 0, 0}, {0, 0, 0}});
    }

    @Test
    void oneBucketCountsSinceTheLastAdvance() {
      var load = new ExpertLoad(LAYERS, 2, 1);
      load.record(2, new int[] {3, 4});
      assertThat(load.snapshot()[2]).containsExactly(3, 4);
      load.advance();
      assertThat(load.snapshot()[2]).containsExactly(0, 0);
    }

    @Test
    void routingCountsEachExpertsAssignments() {
      var rng = new SplittableRandom(5);
      var load = new ExpertLoad(LAYERS, 6, 4);
      long[] expected = new long[6];
      try (TensorArena arena = TensorArena.open()) {
        for (int batch = 0; batch < 10; batch++) {
          Routing routing = ReplicaPickerTest.randomRouting(arena, rng, rng.nextInt(1, 30));
          load.record(1, routing);
          for (int e = 0; e < 6; e++) expected[e] += routing.count(e);
        }
      }
      assertThat(load.snapshot()[1]).containsExactly(expected);
      assertThat(load.snapshot()[2]).containsOnly(0);
    }

    @Test
    void rejectsDenseLayersAndWrongShapes() {
      var load = new ExpertLoad(LAYERS, 3, 2);
      assertThatThrownBy(() -> load.record(0, new int[3])).hasMessageContaining("layer 0 is not a MoE layer");
      assertThatThrownBy(() -> load.record(3, new int[3])).hasMessageContaining("layer 3 is not a MoE layer");
      assertThatThrownBy(() -> load.record(1, new int[4])).hasMessageContaining("4 counts for 3 experts");
      assertThatThrownBy(() -> load.add(1, 3, 1)).hasMessageContaining("expert 3 not in [0, 3)");
    }
  }

  @Nested
  class Concurrency {
    /** Four threads record onto the same counters while a fifth advances a window long enough to keep everything. */
    @Test
    void concurrentRecordsAreAllCounted() throws Exception {
      int threads = 4, batches = 200_000, buckets = 1_000;
      var load = new ExpertLoad(LAYERS, 8, buckets);
      int[] counts = {1, 2, 3, 4, 5, 6, 7, 8};
      ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
      try {
        var start = new CountDownLatch(1);
        List<Future<?>> tasks = new ArrayList<>();
        for (int t = 0; t < threads; t++)
          tasks.add(pool.submit(() -> {
            start.await();
            for (int b = 0; b < batches; b++) load.record(1, counts);
            return null;
          }));
        tasks.add(pool.submit(() -> {
          start.await();
          for (int i = 0; i < buckets - 1; i++) load.advance();
          return null;
        }));
        start.countDown();
        for (Future<?> f : tasks) f.get();
      } finally {
        pool.shutdown();
      }
      long[] expected = new long[8];
      for (int e = 0; e < 8; e++) expected[e] = (long) threads * batches * counts[e];
      assertThat(load.snapshot()[1]).containsExactly(expected);
    }
  }
}
