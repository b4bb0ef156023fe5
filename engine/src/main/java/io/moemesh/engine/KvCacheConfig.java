package io.moemesh.engine;

/**
 * The paged latent-KV pool of one engine.
 *
 * @param numPages pages in the pool
 * @param pageSize tokens per page
 * @param prefixCaching keep full prompt pages for reuse by later prompts with the same prefix
 */
public record KvCacheConfig(int numPages, int pageSize, boolean prefixCaching) {

  public KvCacheConfig {
    if (numPages < 1) throw new IllegalArgumentException("the KV cache needs at least one page, got " + numPages);
    if (pageSize < 1) throw new IllegalArgumentException("a KV page holds at least one token, got " + pageSize);
  }

  /** As many pages of {@code pageSize} tokens as fit in {@code bytes}, at {@code bytesPerToken} (all layers). */
  public static KvCacheConfig ofBytes(long bytes, long bytesPerToken, int pageSize, boolean prefixCaching) {
    long pages = bytes / (bytesPerToken * pageSize);
    if (pages < 1) throw new IllegalArgumentException(bytes + " bytes hold no page of " + pageSize + " tokens at " + bytesPerToken + " bytes per token");
    return new KvCacheConfig((int) Math.min(pages, Integer.MAX_VALUE), pageSize, prefixCaching);
  }
}
