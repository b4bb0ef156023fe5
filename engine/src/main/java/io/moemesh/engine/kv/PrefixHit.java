package io.moemesh.engine.kv;

/**
 * Cached pages holding a prompt's leading full pages, found by {@link KvCacheManager#findPrefix}.
 *
 * @param pageIds the pages, in position order
 * @param chainHash the chain hash after the last page ({@link PageHashes#seed} when there is none)
 */
public record PrefixHit(int[] pageIds, long chainHash) {
  public int numPages() {
    return pageIds.length;
  }
}
