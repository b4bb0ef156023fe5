package io.moemesh.kvstore;

/**
 * Shape of one object: {@code numLayers} row-major tensors of shape {@code (numTokens, latentDim)}, each
 * {@code dtype}; pages of {@code pageSize} tokens are the unit of prefix hashing.
 */
public record KvLayout(int numLayers, int numTokens, int latentDim, KvDType dtype, int pageSize) {

  /** Hard caps that catch garbage layouts before any arithmetic (far above DeepSeek-V3's 61 layers × 576). */
  static final int MAX_LAYERS = 4096;
  static final int MAX_LATENT_DIM = 1 << 16;

  /** @throws KvStoreException INVALID_ARGUMENT naming the first bad field */
  public KvLayout {
    if (dtype == null) throw KvStoreException.invalid("layout.dtype must be BF16 or F32");
    requireRange("layout.num_layers", numLayers, MAX_LAYERS);
    requireRange("layout.num_tokens", numTokens, Integer.MAX_VALUE);
    requireRange("layout.latent_dim", latentDim, MAX_LATENT_DIM);
    requireRange("layout.page_size", pageSize, Integer.MAX_VALUE);
  }

  private static void requireRange(String field, int value, int max) {
    if (value < 1 || value > max) throw KvStoreException.invalid("%s must be in [1, %d], got %d", field, max, value);
  }

  /** Bytes of one token of one layer. */
  public long rowBytes() {
    return (long) latentDim * dtype.byteSize();
  }

  /** Bytes of one layer: {@code (numTokens, latentDim)}. */
  public long layerBytes() {
    return rowBytes() * numTokens;
  }

  /** Bytes of the whole object (cannot overflow: the caps keep it below 2^63). */
  public long totalBytes() {
    return layerBytes() * numLayers;
  }

  /** Pages completely filled by the object's tokens: the number of page hashes it may carry. */
  public int numFullPages() {
    return numTokens / pageSize;
  }
}
