package io.moemesh.engine.kv;

/**
 * A snapshot of the page pool for metrics ({@code vllm:kv_cache_usage_perc}, prefix-cache hit rate).
 *
 * @param usedPages pages held by at least one request
 * @param cachedPages free pages still holding a reusable prefix (evicted least-recently-used first)
 * @param freePages pages holding nothing
 * @param queriedTokens prompt tokens looked up in the prefix cache so far
 * @param hitTokens of those, tokens found
 */
public record KvCacheUsage(int numPages, int pageSize, int usedPages, int cachedPages, int freePages, long queriedTokens, long hitTokens) {

  /** Fraction of pages in use, in [0, 1]. */
  public double usage() {
    return (double) usedPages / numPages;
  }

  public double prefixHitRate() {
    return queriedTokens == 0 ? 0 : (double) hitTokens / queriedTokens;
  }
}
