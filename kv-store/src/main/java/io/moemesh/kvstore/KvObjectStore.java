package io.moemesh.kvstore;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The latent-KV object store, free of any framework: Mooncake semantics on off-heap memory.
 *
 * <p>An object's life: {@link #putStart} reserves its bytes (evicting released or expired objects, least
 * recently used first, if needed) → {@link PendingPut#writeRows} in any order → {@link PendingPut#end}
 * commits it, immutable from then on, with a lease counted from the commit; {@link PendingPut#revoke} frees
 * it instead. A committed object is gettable by key while its lease runs and until {@link #release}; a
 * {@link #get} pins it, and pinned objects are never freed. Released objects stay as prefix-lookup hints
 * until their memory is needed; expired ones are freed by {@link #reap} (which also revokes puts idle for
 * too long) or by eviction. Live objects are never evicted: when they fill the store, a put fails with
 * RESOURCE_EXHAUSTED.
 *
 * <p>Thread-safe. Metadata changes hold one lock briefly; row copies and memory frees happen outside it.
 */
public final class KvObjectStore implements AutoCloseable {

  /** The configured bounds: memory, default and maximum lease, and how long a put may stay silent. */
  public record Limits(long maxBytes, Duration defaultLease, Duration maxLease, Duration putIdleTimeout) {}

  /** Figures at one instant (the gRPC Stats reply and the metrics gauges). */
  public record Stats(long maxBytes, long usedBytes, long writingBytes, int writingObjects, int liveObjects,
      int evictableObjects, int pinnedObjects, long evictionsTotal, long expiredTotal, long abandonedPutsTotal) {}

  /** The best prefix match: {@code matchedPages} leading pages of the query equal the object's. */
  public record PrefixMatch(String key, int matchedPages, int matchedTokens, boolean gettable) {}

  static final int MAX_KEY_LENGTH = 256;

  private final Limits limits;
  private final InstantSource clock;
  private final Object lock = new Object();
  // guarded by lock: insertion order = least recently used first (touch() moves an object to the end)
  private final LinkedHashMap<String, KvObject> objects = new LinkedHashMap<>();
  private final Map<Long, Set<KvObject>> firstPageHashToObjects = new HashMap<>();
  private long usedBytes;
  private long evictionsTotal;
  private long expiredTotal;
  private long abandonedPutsTotal;

  public KvObjectStore(Limits limits, InstantSource clock) {
    if (limits.maxBytes() < 1) throw new IllegalArgumentException("maxBytes must be ≥ 1, got " + limits.maxBytes());
    if (limits.defaultLease().compareTo(limits.maxLease()) > 0 || !limits.defaultLease().isPositive()) {
      throw new IllegalArgumentException("need 0 < defaultLease ≤ maxLease, got " + limits);
    }
    if (!limits.putIdleTimeout().isPositive()) throw new IllegalArgumentException("putIdleTimeout must be > 0, got " + limits);
    this.limits = limits;
    this.clock = clock;
  }

  /**
   * Phase one of a put: validates, claims the key and reserves the memory.
   *
   * @param pageHashes one chain hash per full page, or none (never null)
   * @param lease the lease from commit on; null or zero for the default
   * @throws KvStoreException INVALID_ARGUMENT, ALREADY_EXISTS or RESOURCE_EXHAUSTED
   */
  public PendingPut putStart(String key, KvLayout layout, long[] pageHashes, Duration lease) {
    requireKey(key);
    if (layout == null) throw KvStoreException.invalid("put of '%s': layout is required", key);
    if (pageHashes.length != 0 && pageHashes.length != layout.numFullPages()) {
      throw KvStoreException.invalid("put of '%s': %d page hashes for %d full pages (%d tokens / page size %d); send one per full page or none",
          key, pageHashes.length, layout.numFullPages(), layout.numTokens(), layout.pageSize());
    }
    KvObject object = new KvObject(key, layout, pageHashes.clone(), leaseOrDefault(lease, "lease"), clock.instant());
    List<KvObject> toFree = new ArrayList<>();
    try {
      synchronized (lock) {
        Instant now = clock.instant();
        KvObject existing = objects.get(key);
        if (existing != null) {
          if (!existing.isEvictable(now)) throw KvStoreException.exists("key '%s' is taken: the object %s", key, describe(existing, now));
          remove(existing); // a released or expired object with that key is simply replaced
          toFree.add(existing);
        }
        reserve(object, now, toFree);
        objects.put(key, object);
      }
    } finally {
      toFree.forEach(KvObject::free); // outside the lock: closing a shared arena is a thread handshake
    }
    try {
      object.allocate();
    } catch (OutOfMemoryError e) {
      revoke(object);
      throw KvStoreException.exhausted("put of '%s': the machine has no %d bytes of native memory left", key, object.bytes);
    }
    return new PendingPut(this, object);
  }

  /** Accounts the object's bytes, evicting least-recently-used evictable objects into {@code toFree} if needed. */
  private void reserve(KvObject object, Instant now, List<KvObject> toFree) {
    long need = object.bytes;
    if (need > limits.maxBytes()) {
      throw KvStoreException.exhausted("put of '%s': the object needs %d bytes but the store holds at most %d (max-bytes)",
          object.key, need, limits.maxBytes());
    }
    long free = limits.maxBytes() - usedBytes;
    if (need <= free) {
      usedBytes += need;
      return;
    }
    long evictable = 0;
    List<KvObject> victims = new ArrayList<>();
    for (KvObject o : objects.values()) { // least recently used first
      if (evictable >= need - free) break;
      if (o.isEvictable(now)) {
        victims.add(o);
        evictable += o.bytes;
      }
    }
    if (free + evictable < need) {
      Stats s = statsLocked(now);
      throw KvStoreException.exhausted(
          "put of '%s': the object needs %d bytes, %d are free and %d evictable; the rest of max-bytes %d is held by %d live, %d pinned and %d still-writing objects",
          object.key, need, free, evictable, limits.maxBytes(), s.liveObjects(), s.pinnedObjects(), s.writingObjects());
    }
    for (KvObject victim : victims) {
      remove(victim);
      evictionsTotal++;
      toFree.add(victim);
    }
    usedBytes += need;
  }

  /** Phase two: commits a completely written object. Called by {@link PendingPut#end}. */
  Instant commit(KvObject object) {
    synchronized (object) { // lock order: object, then store
      String missing = object.sealIfComplete();
      if (missing != null) throw KvStoreException.precondition("PutEnd of '%s' before every row was written: %s", object.key, missing);
      synchronized (lock) {
        if (object.state != KvObject.State.WRITING) throw KvStoreException.notFound("put of '%s' was revoked", object.key);
        object.state = KvObject.State.COMMITTED;
        object.leaseEnd = clock.instant().plus(object.lease);
        if (object.pageHashes.length > 0) {
          firstPageHashToObjects.computeIfAbsent(object.pageHashes[0], h -> new LinkedHashSet<>()).add(object);
        }
        touch(object);
        return object.leaseEnd;
      }
    }
  }

  /** Abandons a put and frees its memory; no-op once committed or already revoked. */
  void revoke(KvObject object) {
    synchronized (lock) {
      if (object.state != KvObject.State.WRITING) return;
      remove(object);
    }
    object.free();
  }

  /**
   * Pins a live object for reading; close the reader to unpin it.
   *
   * @throws KvStoreException NOT_FOUND saying whether the key is unknown, still being written, released or expired
   */
  public ObjectReader get(String key) {
    requireKey(key);
    synchronized (lock) {
      Instant now = clock.instant();
      KvObject object = objects.get(key);
      if (object == null || !object.isLive(now)) throw notGettable(key, object, now);
      return pin(object, object.layout.numTokens());
    }
  }

  /**
   * Pins a committed object the store still holds — live, released or expired — for reading its first
   * {@code numTokens} positions: a prefix import. Immutable rows are as good after a release as before.
   *
   * @throws KvStoreException INVALID_ARGUMENT for a count outside [1, the object's tokens], NOT_FOUND for an object
   *     that is unknown, still being written or freed
   */
  public ObjectReader readPrefix(String key, int numTokens) {
    requireKey(key);
    synchronized (lock) {
      KvObject object = objects.get(key);
      if (object == null || object.state == KvObject.State.WRITING || object.state == KvObject.State.FREED)
        throw notGettable(key, object, clock.instant());
      if (numTokens < 1 || numTokens > object.layout.numTokens())
        throw KvStoreException.invalid("prefix read of '%s': %d tokens asked, the object holds %d", key, numTokens, object.layout.numTokens());
      return pin(object, numTokens);
    }
  }

  /** Caller holds lock. */
  private ObjectReader pin(KvObject object, int numTokens) {
    object.pins++;
    touch(object);
    return new ObjectReader(this, object, numTokens);
  }

  Instant now() {
    return clock.instant();
  }

  void unpin(KvObject object) {
    synchronized (lock) {
      object.pins--;
    }
  }

  /**
   * Sets a live object's lease to end {@code ttl} from now.
   *
   * @throws KvStoreException INVALID_ARGUMENT for a non-positive or too long ttl, NOT_FOUND as for {@link #get}
   */
  public Instant extendLease(String key, Duration ttl) {
    requireKey(key);
    if (ttl == null || !ttl.isPositive()) throw KvStoreException.invalid("ExtendLease of '%s': ttl must be > 0, got %s", key, ttl);
    Duration checked = leaseOrDefault(ttl, "ttl");
    synchronized (lock) {
      Instant now = clock.instant();
      KvObject object = objects.get(key);
      if (object == null || !object.isLive(now)) throw notGettable(key, object, now);
      object.leaseEnd = now.plus(checked);
      return object.leaseEnd;
    }
  }

  /**
   * Makes a committed object evictable and no longer gettable; releasing it again is a no-op.
   *
   * @throws KvStoreException NOT_FOUND for an unknown key, FAILED_PRECONDITION while it is being written
   */
  public void release(String key) {
    requireKey(key);
    synchronized (lock) {
      KvObject object = objects.get(key);
      if (object == null) throw notGettable(key, null, clock.instant());
      switch (object.state) {
        case WRITING -> throw KvStoreException.precondition("object '%s' is still being written: revoke the put instead of releasing it", key);
        case COMMITTED -> object.state = KvObject.State.RELEASED;
        case RELEASED, FREED -> { }
      }
    }
  }

  /**
   * Finds the committed object (live, released or expired but still held) whose page hashes share the
   * longest leading run with {@code pageHashes}; ties go to a gettable object, then the most recently committed.
   */
  public Optional<PrefixMatch> lookupPrefix(long[] pageHashes) {
    if (pageHashes.length == 0) return Optional.empty();
    synchronized (lock) {
      Instant now = clock.instant();
      KvObject best = null;
      int bestPages = 0;
      // Chain hashes: objects sharing a prefix share page 0's hash, so only those are compared.
      for (KvObject o : firstPageHashToObjects.getOrDefault(pageHashes[0], Set.of())) {
        int n = Math.min(o.pageHashes.length, pageHashes.length);
        int mismatch = Arrays.mismatch(o.pageHashes, 0, n, pageHashes, 0, n);
        int pages = mismatch < 0 ? n : mismatch;
        if (pages > bestPages || pages == bestPages && pages > 0 && preferable(o, best, now)) {
          best = o;
          bestPages = pages;
        }
      }
      if (best == null) return Optional.empty();
      touch(best);
      return Optional.of(new PrefixMatch(best.key, bestPages, bestPages * best.layout.pageSize(), best.isLive(now)));
    }
  }

  private static boolean preferable(KvObject candidate, KvObject best, Instant now) {
    return !best.isLive(now) || candidate.isLive(now); // same liveness: the later committed (set order) wins
  }

  /**
   * Frees every expired, unpinned object, and every put that received no frame for {@code putIdleTimeout}
   * (a stuck writer whose stream stays open would otherwise hold its reservation forever); returns how many.
   * The service calls it periodically.
   */
  public int reap() {
    List<KvObject> reaped = new ArrayList<>();
    synchronized (lock) {
      Instant now = clock.instant();
      Instant idleSince = now.minus(limits.putIdleTimeout());
      for (KvObject o : objects.values()) {
        if (o.pins == 0 && o.isExpired(now)) {
          reaped.add(o);
          expiredTotal++;
        } else if (o.state == KvObject.State.WRITING && !o.lastWrite().isAfter(idleSince)) {
          reaped.add(o);
          abandonedPutsTotal++;
        }
      }
      reaped.forEach(this::remove);
    }
    reaped.forEach(KvObject::free);
    return reaped.size();
  }

  public Stats stats() {
    synchronized (lock) {
      return statsLocked(clock.instant());
    }
  }

  private Stats statsLocked(Instant now) {
    long writingBytes = 0;
    int writing = 0, live = 0, evictable = 0, pinned = 0;
    for (KvObject o : objects.values()) {
      if (o.pins > 0) pinned++;
      if (o.state == KvObject.State.WRITING) {
        writing++;
        writingBytes += o.bytes;
      } else if (o.isLive(now)) {
        live++;
      } else if (o.isEvictable(now)) {
        evictable++;
      }
    }
    return new Stats(limits.maxBytes(), usedBytes, writingBytes, writing, live, evictable, pinned, evictionsTotal, expiredTotal, abandonedPutsTotal);
  }

  /** Frees every object (shutdown). Readers still streaming will fail. */
  @Override
  public void close() {
    List<KvObject> all;
    synchronized (lock) {
      all = new ArrayList<>(objects.values());
      all.forEach(this::remove);
    }
    all.forEach(KvObject::free);
  }

  // ---- helpers (callers hold lock where noted) -----------------------------------------------------------

  /** Moves the object to the most-recently-used end. Caller holds lock. */
  private void touch(KvObject object) {
    objects.remove(object.key);
    objects.put(object.key, object);
  }

  /** Unlinks the object and returns its bytes to the budget; the caller frees its memory. Caller holds lock. */
  private void remove(KvObject object) {
    objects.remove(object.key, object);
    if (object.pageHashes.length > 0) {
      Set<KvObject> sharing = firstPageHashToObjects.get(object.pageHashes[0]);
      if (sharing != null && sharing.remove(object) && sharing.isEmpty()) firstPageHashToObjects.remove(object.pageHashes[0]);
    }
    usedBytes -= object.bytes;
    object.state = KvObject.State.FREED;
  }

  private Duration leaseOrDefault(Duration lease, String field) {
    if (lease == null || lease.isZero()) return limits.defaultLease();
    if (lease.isNegative()) throw KvStoreException.invalid("%s must be ≥ 0, got %s", field, lease);
    if (lease.compareTo(limits.maxLease()) > 0) {
      throw KvStoreException.invalid("%s %s exceeds the store's max-lease %s", field, lease, limits.maxLease());
    }
    return lease;
  }

  private static void requireKey(String key) {
    if (key == null || key.isEmpty()) throw KvStoreException.invalid("key must not be empty");
    if (key.length() > MAX_KEY_LENGTH) throw KvStoreException.invalid("key must be at most %d characters, got %d", MAX_KEY_LENGTH, key.length());
  }

  private static KvStoreException notGettable(String key, KvObject object, Instant now) {
    return KvStoreException.notFound("object '%s' %s", key, object == null
        ? "does not exist (never put, revoked, evicted or reaped)" : describe(object, now));
  }

  private static String describe(KvObject object, Instant now) {
    return switch (object.state) {
      case WRITING -> "is still being written (no PutEnd yet)";
      case COMMITTED -> object.isLive(now) ? "is committed and live (objects are immutable)" : "has a lease that expired at " + object.leaseEnd;
      case RELEASED -> object.pins > 0 ? "was released and is still being read" : "was released";
      case FREED -> "was freed";
    };
  }
}
