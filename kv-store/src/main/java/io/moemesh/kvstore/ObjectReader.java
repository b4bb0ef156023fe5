package io.moemesh.kvstore;

import java.time.Instant;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A pin on a committed object: while open, the object's memory stays put whatever happens to its lease.
 * Close it exactly when the reading ends (closing twice is harmless).
 */
public final class ObjectReader implements AutoCloseable {
  private final KvObjectStore store;
  private final KvObject object;
  private final Instant leaseEnd; // as of the get
  private final int numTokens;
  private final AtomicBoolean closed = new AtomicBoolean();

  ObjectReader(KvObjectStore store, KvObject object, int numTokens) {
    this.store = store;
    this.object = object;
    this.leaseEnd = object.leaseEnd;
    this.numTokens = numTokens;
  }

  /** Positions this reader streams: all of the object's, or a prefix of them. */
  public int numTokens() {
    return numTokens;
  }

  public String key() {
    return object.key;
  }

  public KvLayout layout() {
    return object.layout;
  }

  public long[] pageHashes() {
    return object.pageHashes.clone();
  }

  public long bytes() {
    return object.bytes;
  }

  /** Bytes of rows this reader streams: the object's, or its prefix's. */
  public long streamedBytes() {
    return (long) object.layout.numLayers() * numTokens * object.layout.rowBytes();
  }

  public Instant leaseEnd() {
    return leaseEnd;
  }

  /** Copies rows {@code [tokenStart, tokenStart + rowCount)} of layer {@code layerId} into a new array. */
  public byte[] readRows(int layerId, int tokenStart, int rowCount) {
    if (closed.get()) throw new IllegalStateException("reader of '" + object.key + "' is closed");
    KvLayout layout = object.layout;
    if (layerId < 0 || layerId >= layout.numLayers() || tokenStart < 0 || rowCount < 1 || tokenStart + rowCount > numTokens) {
      throw new IndexOutOfBoundsException("layer %d rows [%d, %d) of %s".formatted(layerId, tokenStart, tokenStart + rowCount, layout));
    }
    byte[] out = new byte[Math.toIntExact(rowCount * layout.rowBytes())];
    object.readRows(layerId, tokenStart, rowCount, out);
    return out;
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) store.unpin(object);
  }
}
