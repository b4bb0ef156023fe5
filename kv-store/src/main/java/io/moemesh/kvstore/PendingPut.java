package io.moemesh.kvstore;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Arrays;

/**
 * A put between {@link KvObjectStore#putStart} and its end: the writer's handle. Frames may be written
 * in any order; each is checked against the layout before a byte is copied, so a bad frame changes nothing.
 */
public final class PendingPut {

  /** A committed object: its size and when its lease ends. */
  public record Committed(String key, long bytes, Instant leaseEnd) {}

  private final KvObjectStore store;
  private final KvObject object;

  PendingPut(KvObjectStore store, KvObject object) {
    this.store = store;
    this.object = object;
  }

  public String key() {
    return object.key;
  }

  public KvLayout layout() {
    return object.layout;
  }

  /**
   * Copies rows {@code [tokenStart, tokenStart + shape[0])} of layer {@code layerId} into the object.
   *
   * @param shape must be {@code (rowCount, latentDim)}
   * @param data little-endian, row-major elements of {@code dtype}; exactly the shape's byte size
   * @throws KvStoreException INVALID_ARGUMENT for any mismatch with the layout or an overlap with written rows
   */
  public void writeRows(int layerId, int tokenStart, KvDType dtype, long[] shape, ByteBuffer data) {
    KvLayout layout = object.layout;
    String where = "put of '%s' layer %d".formatted(object.key, layerId);
    if (layerId < 0 || layerId >= layout.numLayers()) {
      throw KvStoreException.invalid("%s: layer_id must be in [0, %d)", where, layout.numLayers());
    }
    if (dtype != layout.dtype()) throw KvStoreException.invalid("%s: rows dtype %s, layout dtype %s", where, dtype, layout.dtype());
    if (shape.length != 2 || shape[1] != layout.latentDim() || shape[0] < 1) {
      throw KvStoreException.invalid("%s: rows shape %s, expected (row_count ≥ 1, %d)", where, Arrays.toString(shape), layout.latentDim());
    }
    if (tokenStart < 0 || tokenStart + shape[0] > layout.numTokens()) {
      throw KvStoreException.invalid("%s: rows [%d, %d) fall outside [0, %d)", where, tokenStart, tokenStart + shape[0], layout.numTokens());
    }
    int rowCount = (int) shape[0];
    long expected = rowCount * layout.rowBytes();
    if (data.remaining() != expected) {
      throw KvStoreException.invalid("%s: rows data has %d bytes, shape (%d, %d) of %s needs %d",
          where, data.remaining(), rowCount, layout.latentDim(), dtype, expected);
    }
    object.writeRows(layerId, tokenStart, rowCount, data, store.now());
  }

  /**
   * Commits the object: from now on it is immutable and gettable until its lease ends or it is released.
   *
   * @throws KvStoreException FAILED_PRECONDITION naming missing rows (the put stays open), NOT_FOUND if revoked
   */
  public Committed end() {
    Instant leaseEnd = store.commit(object);
    return new Committed(object.key, object.bytes, leaseEnd);
  }

  /** Abandons the put and frees its memory; no-op after {@link #end} succeeded or a previous revoke. */
  public void revoke() {
    store.revoke(object);
  }
}
