package io.moemesh.kvstore;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * One object and its off-heap memory. Two locks guard it: the store's lock guards the lifecycle fields
 * ({@link #state}, {@link #leaseEnd}, {@link #pins}); this object's monitor guards the memory and the
 * written-rows bookkeeping, so a row copy never holds the store lock and a free never races a copy.
 * Lock order: this object, then the store.
 */
final class KvObject {

  /** WRITING → COMMITTED → RELEASED; any → FREED. "Expired" is COMMITTED with a past lease end. */
  enum State { WRITING, COMMITTED, RELEASED, FREED }

  final String key;
  final KvLayout layout;
  final long[] pageHashes; // one chain hash per full page, or empty
  final Duration lease; // counted from commit
  final long bytes;
  private volatile Instant lastWrite; // start or latest row write: a put idle too long is reaped

  // guarded by the store lock
  State state = State.WRITING;
  Instant leaseEnd = Instant.MAX;
  int pins;

  // guarded by this
  private Arena arena;
  private MemorySegment data; // (numLayers, numTokens, latentDim) of layout.dtype, row-major
  private BitSet[] writtenRows; // per layer, while WRITING
  private boolean sealed; // committed or freed: no more writes

  KvObject(String key, KvLayout layout, long[] pageHashes, Duration lease, Instant startedAt) {
    this.lastWrite = startedAt;
    this.key = key;
    this.layout = layout;
    this.pageHashes = pageHashes;
    this.lease = lease;
    this.bytes = layout.totalBytes();
  }

  /** Allocates the memory (zeroed by the arena); outside the store lock since it touches every page. */
  synchronized void allocate() {
    if (sealed) return; // revoked before its memory arrived
    arena = Arena.ofShared(); // shared: written and read by different threads
    data = arena.allocate(bytes, 64);
    writtenRows = new BitSet[layout.numLayers()];
    for (int l = 0; l < writtenRows.length; l++) writtenRows[l] = new BitSet(layout.numTokens());
  }

  /** Copies {@code rowCount} rows (already validated against the layout) into layer {@code layerId}. */
  synchronized void writeRows(int layerId, int tokenStart, int rowCount, ByteBuffer rows, Instant now) {
    if (sealed) throw notWriting();
    lastWrite = now;
    BitSet written = writtenRows[layerId];
    int clash = written.nextSetBit(tokenStart);
    if (clash >= 0 && clash < tokenStart + rowCount) {
      throw KvStoreException.invalid("object '%s' layer %d: rows [%d, %d) overlap row %d, which is already written",
          key, layerId, tokenStart, tokenStart + rowCount, clash);
    }
    long offset = layerId * layout.layerBytes() + tokenStart * layout.rowBytes();
    MemorySegment.copy(MemorySegment.ofBuffer(rows), 0, data, offset, rowCount * layout.rowBytes());
    written.set(tokenStart, tokenStart + rowCount);
  }

  /** Seals the object if every row is written, else describes what is missing (and stays writable). */
  synchronized String sealIfComplete() {
    if (sealed) throw notWriting();
    List<String> missing = new ArrayList<>();
    int incompleteLayers = 0;
    for (int l = 0; l < writtenRows.length; l++) {
      int from = writtenRows[l].nextClearBit(0);
      if (from >= layout.numTokens()) continue;
      if (++incompleteLayers > 4) continue; // name a few, count the rest
      int to = writtenRows[l].nextSetBit(from);
      missing.add("layer %d misses %d rows, first [%d, %d)".formatted(l,
          layout.numTokens() - writtenRows[l].cardinality(), from, to < 0 ? layout.numTokens() : to));
    }
    if (incompleteLayers > 4) missing.add("%d more incomplete layers".formatted(incompleteLayers - 4));
    if (!missing.isEmpty()) return String.join("; ", missing);
    sealed = true;
    writtenRows = null;
    return null;
  }

  /** Copies rows of a committed, pinned object out (pinned: the memory cannot be freed meanwhile). */
  void readRows(int layerId, int tokenStart, int rowCount, byte[] out) {
    long offset = layerId * layout.layerBytes() + tokenStart * layout.rowBytes();
    MemorySegment.copy(data, offset, MemorySegment.ofArray(out), 0, rowCount * layout.rowBytes());
  }

  /** Returns the memory; idempotent; waits for an in-flight {@link #writeRows} to finish first. */
  synchronized void free() {
    sealed = true;
    writtenRows = null;
    if (arena != null) {
      arena.close();
      arena = null;
      data = null;
    }
  }

  Instant lastWrite() {
    return lastWrite;
  }

  private KvStoreException notWriting() {
    return KvStoreException.precondition("object '%s' is no longer being written (committed, revoked, or reaped after put-idle-timeout)", key);
  }

  boolean isExpired(Instant now) {
    return state == State.COMMITTED && !now.isBefore(leaseEnd);
  }

  boolean isLive(Instant now) {
    return state == State.COMMITTED && now.isBefore(leaseEnd);
  }

  /** Released or expired, and no reader holds it: may be evicted. */
  boolean isEvictable(Instant now) {
    return pins == 0 && (state == State.RELEASED || isExpired(now));
  }
}
