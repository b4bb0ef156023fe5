package io.moemesh.kvstore;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.kvstore.KvStoreException.Reason;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class KvObjectStoreTest {
  /** 2 layers × 8 tokens × 4 values, BF16, pages of 4 tokens: 128 bytes per object. */
  static final KvLayout LAYOUT = new KvLayout(2, 8, 4, KvDType.BF16, 4);
  static final long OBJECT_BYTES = 128;

  final MutableClock clock = new MutableClock();
  KvObjectStore store = newStore(4 * OBJECT_BYTES);

  KvObjectStore newStore(long maxBytes) {
    return new KvObjectStore(new KvObjectStore.Limits(maxBytes, Duration.ofSeconds(30), Duration.ofMinutes(5), Duration.ofMinutes(1)), clock);
  }

  @AfterEach
  void closeStore() {
    store.close();
  }

  @Nested
  class TwoPhasePut {
    @Test
    void committedObjectReadsBackByteExact() {
      byte[][] layers = put("a", new long[] {11, 12});
      try (ObjectReader reader = store.get("a")) {
        assertThat(reader.layout()).isEqualTo(LAYOUT);
        assertThat(reader.pageHashes()).containsExactly(11, 12);
        assertThat(reader.readRows(0, 0, 8)).isEqualTo(layers[0]);
        assertThat(reader.readRows(1, 0, 8)).isEqualTo(layers[1]);
        assertThat(reader.readRows(1, 3, 2)).isEqualTo(java.util.Arrays.copyOfRange(layers[1], 3 * 8, 5 * 8));
        assertThat(reader.leaseEnd()).isEqualTo(clock.now.plusSeconds(30));
      }
    }

    @Test
    void getBeforePutEndIsNotFound() {
      PendingPut put = store.putStart("a", LAYOUT, new long[0], null);
      writeAll(put, randomLayers(1));
      assertError(() -> store.get("a"), Reason.NOT_FOUND, "object 'a' is still being written (no PutEnd yet)");
      put.end();
      store.get("a").close();
    }

    @Test
    void putEndWithMissingRowsNamesThemAndKeepsThePutOpen() {
      PendingPut put = store.putStart("a", LAYOUT, new long[0], null);
      byte[][] layers = randomLayers(2);
      put.writeRows(0, 0, KvDType.BF16, new long[] {3, 4}, ByteBuffer.wrap(layers[0], 0, 3 * 8));
      assertError(put::end, Reason.FAILED_PRECONDITION,
          "PutEnd of 'a' before every row was written: layer 0 misses 5 rows, first [3, 8); layer 1 misses 8 rows, first [0, 8)");
      put.writeRows(0, 3, KvDType.BF16, new long[] {5, 4}, ByteBuffer.wrap(layers[0], 3 * 8, 5 * 8));
      put.writeRows(1, 0, KvDType.BF16, new long[] {8, 4}, ByteBuffer.wrap(layers[1]));
      assertThat(put.end().bytes()).isEqualTo(OBJECT_BYTES);
    }

    @Test
    void badFramesAreRejectedPreciselyAndChangeNothing() {
      PendingPut put = store.putStart("a", LAYOUT, new long[0], null);
      ByteBuffer row = ByteBuffer.allocate(8);
      assertError(() -> put.writeRows(2, 0, KvDType.BF16, new long[] {1, 4}, row), Reason.INVALID_ARGUMENT,
          "put of 'a' layer 2: layer_id must be in [0, 2)");
      assertError(() -> put.writeRows(0, 0, KvDType.F32, new long[] {1, 4}, row), Reason.INVALID_ARGUMENT,
          "put of 'a' layer 0: rows dtype F32, layout dtype BF16");
      assertError(() -> put.writeRows(0, 0, KvDType.BF16, new long[] {1, 5}, row), Reason.INVALID_ARGUMENT,
          "put of 'a' layer 0: rows shape [1, 5], expected (row_count ≥ 1, 4)");
      assertError(() -> put.writeRows(0, 7, KvDType.BF16, new long[] {2, 4}, ByteBuffer.allocate(16)), Reason.INVALID_ARGUMENT,
          "put of 'a' layer 0: rows [7, 9) fall outside [0, 8)");
      assertError(() -> put.writeRows(0, 0, KvDType.BF16, new long[] {1, 4}, ByteBuffer.allocate(6)), Reason.INVALID_ARGUMENT,
          "put of 'a' layer 0: rows data has 6 bytes, shape (1, 4) of BF16 needs 8");
      put.writeRows(0, 2, KvDType.BF16, new long[] {2, 4}, ByteBuffer.allocate(16));
      assertError(() -> put.writeRows(0, 0, KvDType.BF16, new long[] {3, 4}, ByteBuffer.allocate(24)), Reason.INVALID_ARGUMENT,
          "object 'a' layer 0: rows [0, 3) overlap row 2, which is already written");
      assertError(put::end, Reason.FAILED_PRECONDITION, "layer 0 misses 6 rows, first [0, 2)");
    }

    @Test
    void duplicateKeyIsAlreadyExists() {
      PendingPut writing = store.putStart("a", LAYOUT, new long[0], null);
      assertError(() -> store.putStart("a", LAYOUT, new long[0], null), Reason.ALREADY_EXISTS,
          "key 'a' is taken: the object is still being written");
      writeAll(writing, randomLayers(3));
      writing.end();
      assertError(() -> store.putStart("a", LAYOUT, new long[0], null), Reason.ALREADY_EXISTS,
          "key 'a' is taken: the object is committed and live (objects are immutable)");
    }

    @Test
    void badLayoutsAndHashesAreInvalidArguments() {
      assertError(() -> new KvLayout(0, 8, 4, KvDType.BF16, 4), Reason.INVALID_ARGUMENT, "layout.num_layers must be in [1, 4096], got 0");
      assertError(() -> new KvLayout(2, -1, 4, KvDType.BF16, 4), Reason.INVALID_ARGUMENT, "layout.num_tokens must be in [1, 2147483647], got -1");
      assertError(() -> new KvLayout(2, 8, 4, null, 4), Reason.INVALID_ARGUMENT, "layout.dtype must be BF16 or F32");
      assertError(() -> store.putStart("a", LAYOUT, new long[] {1}, null), Reason.INVALID_ARGUMENT,
          "put of 'a': 1 page hashes for 2 full pages (8 tokens / page size 4); send one per full page or none");
      assertError(() -> store.putStart("", LAYOUT, new long[0], null), Reason.INVALID_ARGUMENT, "key must not be empty");
      assertError(() -> store.putStart("a", LAYOUT, new long[0], Duration.ofHours(1)), Reason.INVALID_ARGUMENT,
          "lease PT1H exceeds the store's max-lease PT5M");
      assertThat(store.stats().usedBytes()).isZero();
    }

    @Test
    void putRevokeFreesMemory() {
      PendingPut put = store.putStart("a", LAYOUT, new long[0], null);
      assertThat(store.stats().writingBytes()).isEqualTo(OBJECT_BYTES);
      put.writeRows(0, 0, KvDType.BF16, new long[] {1, 4}, ByteBuffer.allocate(8));
      put.revoke();
      assertThat(store.stats()).extracting(KvObjectStore.Stats::usedBytes, KvObjectStore.Stats::writingObjects).containsExactly(0L, 0);
      assertError(() -> put.writeRows(0, 1, KvDType.BF16, new long[] {1, 4}, ByteBuffer.allocate(8)), Reason.FAILED_PRECONDITION,
          "object 'a' is no longer being written");
      assertError(() -> store.get("a"), Reason.NOT_FOUND, "object 'a' does not exist");
      put("a", new long[0]); // the key is free again
    }
  }

  @Nested
  class Leases {
    @Test
    void expiredLeaseIsNotGettable() {
      put("a", new long[0]);
      clock.advance(Duration.ofSeconds(30));
      assertError(() -> store.get("a"), Reason.NOT_FOUND, "object 'a' has a lease that expired at " + clock.now);
      assertError(() -> store.extendLease("a", Duration.ofSeconds(5)), Reason.NOT_FOUND, "expired");
    }

    @Test
    void extendLeaseCountsFromNow() {
      put("a", new long[0]);
      clock.advance(Duration.ofSeconds(20));
      assertThat(store.extendLease("a", Duration.ofMinutes(1))).isEqualTo(clock.now.plusSeconds(60));
      clock.advance(Duration.ofSeconds(59));
      store.get("a").close();
      assertError(() -> store.extendLease("a", Duration.ofMinutes(6)), Reason.INVALID_ARGUMENT, "ttl PT6M exceeds the store's max-lease PT5M");
      assertError(() -> store.extendLease("a", Duration.ZERO), Reason.INVALID_ARGUMENT, "ExtendLease of 'a': ttl must be > 0, got PT0S");
    }

    @Test
    void releasedObjectIsNotGettableAndReleaseIsIdempotent() {
      put("a", new long[0]);
      store.release("a");
      store.release("a");
      assertError(() -> store.get("a"), Reason.NOT_FOUND, "object 'a' was released");
      assertError(() -> store.release("b"), Reason.NOT_FOUND, "object 'b' does not exist");
      store.putStart("w", LAYOUT, new long[0], null);
      assertError(() -> store.release("w"), Reason.FAILED_PRECONDITION, "object 'w' is still being written: revoke the put");
      put("a", new long[0]); // a released key may be put again: the old object is dropped
      assertThat(store.stats().liveObjects()).isEqualTo(1);
    }

    @Test
    void reaperFreesExpiredObjectsButNotPinnedOnes() {
      put("a", new long[0]);
      put("b", new long[0]);
      put("c", new long[0], Duration.ofMinutes(1));
      ObjectReader pinned = store.get("b");
      clock.advance(Duration.ofSeconds(31));
      assertThat(store.reap()).isEqualTo(1);
      assertThat(pinned.readRows(0, 0, 1)).hasSize(8); // still readable while pinned
      pinned.close();
      assertThat(store.reap()).isEqualTo(1);
      assertThat(store.stats()).extracting(KvObjectStore.Stats::usedBytes, KvObjectStore.Stats::liveObjects, KvObjectStore.Stats::expiredTotal)
          .containsExactly(OBJECT_BYTES, 1, 2L);
    }
  }

  @Nested
  class IdlePuts {
    @Test
    void putSilentForTheIdleTimeoutIsReapedAndItsWriterToldSo() {
      PendingPut idle = store.putStart("idle", LAYOUT, new long[0], null);
      PendingPut busy = store.putStart("busy", LAYOUT, new long[0], null);
      clock.advance(Duration.ofSeconds(59));
      busy.writeRows(0, 0, KvDType.BF16, new long[] {1, 4}, ByteBuffer.allocate(8)); // a frame restarts the clock
      clock.advance(Duration.ofSeconds(1));
      assertThat(store.reap()).isEqualTo(1);
      assertError(() -> idle.writeRows(0, 0, KvDType.BF16, new long[] {1, 4}, ByteBuffer.allocate(8)), Reason.FAILED_PRECONDITION,
          "object 'idle' is no longer being written (committed, revoked, or reaped after put-idle-timeout)");
      assertThat(store.stats()).extracting(KvObjectStore.Stats::abandonedPutsTotal, KvObjectStore.Stats::writingBytes)
          .containsExactly(1L, OBJECT_BYTES);
      busy.revoke();
    }
  }

  @Nested
  class Eviction {
    @Test
    void evictsLeastRecentlyUsedReleasedObjectsFirst() {
      for (String key : List.of("a", "b", "c", "d")) put(key, new long[] {key.charAt(0), 0});
      store.get("a").close(); // use order now b, c, d, a
      for (String key : List.of("d", "c", "b", "a")) store.release(key);
      put("e", new long[0]);
      assertThat(store.lookupPrefix(new long[] {'b', 0})).isEmpty(); // no match touches nothing
      put("f", new long[0]);
      assertThat(store.lookupPrefix(new long[] {'c', 0})).isEmpty();
      assertThat(store.lookupPrefix(new long[] {'a', 0})).get().extracting(KvObjectStore.PrefixMatch::key).isEqualTo("a");
      assertThat(store.lookupPrefix(new long[] {'d', 0})).get().extracting(KvObjectStore.PrefixMatch::key).isEqualTo("d");
      assertThat(store.stats()).extracting(KvObjectStore.Stats::evictionsTotal, KvObjectStore.Stats::liveObjects,
          KvObjectStore.Stats::evictableObjects).containsExactly(2L, 2, 2);
    }

    @Test
    void pinnedObjectIsNeverEvicted() {
      for (String key : List.of("a", "b", "c", "d")) put(key, new long[0]);
      ObjectReader reader = store.get("a");
      store.release("a");
      clock.advance(Duration.ofMinutes(1)); // b, c, d expire too
      put("e", new long[0]);
      put("f", new long[0]);
      put("g", new long[0]);
      assertError(() -> store.putStart("h", LAYOUT, new long[0], null), Reason.RESOURCE_EXHAUSTED,
          "put of 'h': the object needs 128 bytes, 0 are free and 0 evictable; the rest of max-bytes 512 is held by 3 live, 1 pinned and 0 still-writing objects");
      assertThat(reader.readRows(1, 7, 1)).hasSize(8);
      reader.close();
      put("h", new long[0]); // unpinned: now evictable
    }

    @Test
    void fullStoreRejectsInsteadOfEvictingLiveObjects() {
      for (String key : List.of("a", "b", "c", "d")) put(key, new long[0]);
      assertError(() -> store.putStart("e", LAYOUT, new long[0], null), Reason.RESOURCE_EXHAUSTED,
          "the object needs 128 bytes, 0 are free and 0 evictable");
      for (String key : List.of("a", "b", "c", "d")) store.get(key).close();
      assertThat(store.stats().evictionsTotal()).isZero();
    }

    @Test
    void objectLargerThanTheStoreIsRejected() {
      KvLayout huge = new KvLayout(61, 4096, 576, KvDType.BF16, 64);
      assertError(() -> store.putStart("big", huge, new long[0], null), Reason.RESOURCE_EXHAUSTED,
          "put of 'big': the object needs 287834112 bytes but the store holds at most 512 (max-bytes)");
    }
  }

  @Nested
  class PrefixLookup {
    @Test
    void longestLeadingRunWins() {
      store = newStore(8 * OBJECT_BYTES);
      put("one-page", new long[] {1, 9});
      put("two-pages", new long[] {1, 2});
      put("other", new long[] {7, 2});
      assertThat(store.lookupPrefix(new long[] {1, 2, 3})).hasValue(new KvObjectStore.PrefixMatch("two-pages", 2, 8, true));
      assertThat(store.lookupPrefix(new long[] {1, 5})).get().extracting(KvObjectStore.PrefixMatch::matchedPages).isEqualTo(1);
      assertThat(store.lookupPrefix(new long[] {2, 2})).isEmpty();
      assertThat(store.lookupPrefix(new long[0])).isEmpty();
    }

    @Test
    void releasedObjectAnswersAsANonGettableHintUntilEvicted() {
      put("a", new long[] {1, 2});
      store.release("a");
      assertThat(store.lookupPrefix(new long[] {1, 2})).hasValue(new KvObjectStore.PrefixMatch("a", 2, 8, false));
      put("b", new long[] {1, 2});
      assertThat(store.lookupPrefix(new long[] {1, 2})).get().extracting(KvObjectStore.PrefixMatch::key).isEqualTo("b");
      for (String key : List.of("c", "d", "e")) put(key, new long[0]); // evicts "a"
      store.release("b");
      assertThat(store.lookupPrefix(new long[] {1, 2})).hasValue(new KvObjectStore.PrefixMatch("b", 2, 8, false));
    }
  }

  @Nested
  class PrefixReads {
    @Test
    void readTheFirstPositionsOfAnObjectLiveReleasedOrExpired() {
      byte[][] layers = put("a", new long[] {1, 2});
      try (ObjectReader reader = store.readPrefix("a", 4)) {
        assertThat(reader.numTokens()).isEqualTo(4);
        assertThat(reader.streamedBytes()).isEqualTo(OBJECT_BYTES / 2);
        assertThat(reader.readRows(1, 0, 4)).isEqualTo(java.util.Arrays.copyOf(layers[1], 4 * 8));
        assertThatThrownBy(() -> reader.readRows(1, 3, 2)).isInstanceOf(IndexOutOfBoundsException.class);
      }
      store.release("a");
      try (ObjectReader reader = store.readPrefix("a", 8)) {
        assertThat(reader.readRows(0, 0, 8)).isEqualTo(layers[0]);
      }
      put("b", new long[0]);
      clock.advance(Duration.ofMinutes(1)); // b's lease ends; the reaper has not run
      try (ObjectReader reader = store.readPrefix("b", 1)) {
        assertThat(reader.readRows(0, 0, 1)).hasSize(8);
      }
    }

    @Test
    void refusedWithTheReason() {
      put("a", new long[0]);
      assertError(() -> store.readPrefix("a", 0), Reason.INVALID_ARGUMENT, "prefix read of 'a': 0 tokens asked, the object holds 8");
      assertError(() -> store.readPrefix("a", 9), Reason.INVALID_ARGUMENT, "prefix read of 'a': 9 tokens asked, the object holds 8");
      assertError(() -> store.readPrefix("nope", 4), Reason.NOT_FOUND, "object 'nope' does not exist");
      PendingPut writing = store.putStart("w", LAYOUT, new long[0], null);
      assertError(() -> store.readPrefix("w", 4), Reason.NOT_FOUND, "object 'w' is still being written");
      writing.revoke();
    }

    @Test
    void aReaderPinsAReleasedObjectAgainstEviction() {
      for (String key : List.of("a", "b", "c", "d")) put(key, new long[0]);
      store.release("a");
      ObjectReader reader = store.readPrefix("a", 4);
      assertError(() -> store.putStart("e", LAYOUT, new long[0], null), Reason.RESOURCE_EXHAUSTED, "1 pinned");
      reader.close();
      put("e", new long[0]);
      assertError(() -> store.readPrefix("a", 4), Reason.NOT_FOUND, "object 'a' does not exist");
    }
  }

  @Test
  void concurrentPutsGetsAndReleasesKeepTheAccountsExact() throws Exception {
    store = newStore(16 * OBJECT_BYTES);
    int threads = 4, rounds = 200;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<Integer>> results = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int id = t;
        results.add(pool.submit((Callable<Integer>) () -> {
          int roundTrips = 0;
          for (int r = 0; r < rounds; r++) {
            String key = "t" + id + "-" + r;
            byte[][] layers = put(key, new long[] {id, r}); // a lookup below may touch it
            try (ObjectReader reader = store.get(key)) {
              if (java.util.Arrays.equals(reader.readRows(1, 0, 8), layers[1])) roundTrips++;
            }
            store.lookupPrefix(new long[] {(id + 1) % threads, r});
            store.release(key); // evictable from now on: later puts make room by evicting it
            if (r % 2 == 1) store.putStart(key + "-revoked", LAYOUT, new long[0], null).revoke();
          }
          return roundTrips;
        }));
      }
      for (Future<Integer> f : results) assertThat(f.get()).isEqualTo(rounds);
    } finally {
      pool.shutdown();
    }
    KvObjectStore.Stats stats = store.stats();
    assertThat(stats.liveObjects()).isZero();
    assertThat(stats.usedBytes()).isEqualTo(OBJECT_BYTES * stats.evictableObjects());
    assertThat(stats.writingObjects()).isZero();
    assertThat(stats.pinnedObjects()).isZero();
    assertThat(stats.evictionsTotal()).isEqualTo(threads * rounds - stats.evictableObjects());
  }

  // ---- helpers -----------------------------------------------------------------------------------------

  byte[][] put(String key, long[] pageHashes) {
    return put(key, pageHashes, null);
  }

  /** Puts an object with random rows, writing layer 1 before layer 0 and rows in two frames each. */
  byte[][] put(String key, long[] pageHashes, Duration lease) {
    byte[][] layers = randomLayers(key.hashCode());
    PendingPut put = store.putStart(key, LAYOUT, pageHashes, lease);
    writeAll(put, layers);
    put.end();
    return layers;
  }

  static void writeAll(PendingPut put, byte[][] layers) {
    for (int layer = layers.length - 1; layer >= 0; layer--) {
      put.writeRows(layer, 5, KvDType.BF16, new long[] {3, 4}, ByteBuffer.wrap(layers[layer], 5 * 8, 3 * 8));
      put.writeRows(layer, 0, KvDType.BF16, new long[] {5, 4}, ByteBuffer.wrap(layers[layer], 0, 5 * 8));
    }
  }

  static byte[][] randomLayers(long seed) {
    Random random = new Random(seed);
    byte[][] layers = new byte[2][64];
    for (byte[] layer : layers) random.nextBytes(layer);
    return layers;
  }

  static void assertError(ThrowingCallable call, Reason reason, String messagePart) {
    assertThatThrownBy(call).isInstanceOfSatisfying(KvStoreException.class, e -> {
      assertThat(e.reason()).isEqualTo(reason);
      assertThat(e.getMessage()).contains(messagePart);
    });
  }

  /** A clock the tests move by hand (thread-safe: the concurrency test advances it from several threads). */
  static final class MutableClock implements InstantSource {
    volatile Instant now = Instant.parse("2026-01-01T00:00:00Z");

    synchronized void advance(Duration d) {
      now = now.plus(d);
    }

    @Override
    public Instant instant() {
      return now;
    }
  }
}
