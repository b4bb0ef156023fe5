package io.moemesh.engine.kv;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;

/**
 * Who holds which latent-KV page ({@code kv_lora_rank + qk_rope_head_dim} values per token per layer; the
 * memory is the model's {@code LatentKvCache}). Pages are reference-counted: a cached prefix page can back
 * several requests at once. A full page of prompt tokens is registered under its chain hash
 * ({@link PageHashes}); when its last holder frees it, it stays cached and a later prompt with the same
 * prefix reuses it. Allocation takes never-cached pages first, then evicts cached ones least-recently-freed
 * first. Single-threaded: the engine's step loop owns it.
 */
public final class KvCacheManager {
  /** A cached page's identity: its parent chain hash and its own tokens (compared in full, so no false hits). */
  private record PageKey(long parentHash, int[] tokens) {
    long chainHash() {
      return PageHashes.next(parentHash, tokens, 0, tokens.length);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof PageKey k && k.parentHash == parentHash && Arrays.equals(k.tokens, tokens);
    }

    @Override
    public int hashCode() {
      return Long.hashCode(parentHash) * 31 + Arrays.hashCode(tokens);
    }
  }

  /** One request's pages, and how many of them are registered in the prefix cache. */
  private static final class Blocks {
    int[] pages = new int[4];
    int size;
    int numHashed;
    long chainHash;

    void add(int page) {
      if (size == pages.length) pages = Arrays.copyOf(pages, size * 2);
      pages[size++] = page;
    }
  }

  private final int pageSize;
  private final long seed;
  private final boolean prefixCaching;
  private final int[] refCount;                     // (numPages)
  private final PageKey[] pageKey;                  // (numPages) the key a page is cached under, or null
  private final Map<PageKey, Integer> cachedPages = new HashMap<>();
  private final ArrayDeque<Integer> freePages = new ArrayDeque<>();
  private final LinkedHashSet<Integer> evictable = new LinkedHashSet<>(); // cached, unreferenced; oldest first
  private final Map<String, Blocks> requestIdToBlocks = new HashMap<>();
  private long queriedTokens, hitTokens;

  public KvCacheManager(int numPages, int pageSize, String modelId, boolean prefixCaching) {
    if (numPages < 1 || pageSize < 1) throw new IllegalArgumentException("need ≥ 1 page of ≥ 1 token, got " + numPages + " × " + pageSize);
    this.pageSize = pageSize;
    this.seed = PageHashes.seed(modelId);
    this.prefixCaching = prefixCaching;
    this.refCount = new int[numPages];
    this.pageKey = new PageKey[numPages];
    for (int p = 0; p < numPages; p++) freePages.add(p);
  }

  /** The cached pages holding the longest run of full pages within {@code tokens[0, maxTokens)}. */
  public PrefixHit findPrefix(int[] tokens, int maxTokens) {
    int maxPages = prefixCaching ? Math.min(maxTokens, tokens.length) / pageSize : 0;
    int[] pages = new int[maxPages];
    int n = 0;
    long chain = seed;
    for (; n < maxPages; n++) {
      PageKey key = new PageKey(chain, Arrays.copyOfRange(tokens, n * pageSize, (n + 1) * pageSize));
      Integer page = cachedPages.get(key);
      if (page == null) break;
      pages[n] = page;
      chain = key.chainHash();
    }
    queriedTokens += Math.min(maxTokens, tokens.length);
    hitTokens += (long) n * pageSize;
    return new PrefixHit(Arrays.copyOf(pages, n), chain);
  }

  /**
   * Grows a request's pages to cover positions {@code [0, numTokens)}; a request seen for the first time
   * first adopts {@code hit}'s pages. Returns false and changes nothing when too few pages can be freed.
   */
  public boolean allocate(String requestId, PrefixHit hit, int numTokens) {
    Blocks blocks = requestIdToBlocks.get(requestId);
    int[] adopt = blocks == null && hit != null ? hit.pageIds() : new int[0];
    int held = blocks == null ? adopt.length : blocks.size;
    int needed = Math.max(0, (numTokens + pageSize - 1) / pageSize - held);
    int revived = 0; // hit pages that leave the evictable set
    for (int p : adopt) if (refCount[p] == 0) revived++;
    if (needed > freePages.size() + evictable.size() - revived) return false;
    if (blocks == null) {
      blocks = new Blocks();
      blocks.chainHash = hit != null ? hit.chainHash() : seed;
      for (int p : adopt) {
        if (refCount[p]++ == 0) evictable.remove(p);
        blocks.add(p);
      }
      blocks.numHashed = adopt.length;
      requestIdToBlocks.put(requestId, blocks);
    }
    for (int i = 0; i < needed; i++) blocks.add(takePage());
    return true;
  }

  /** A request's page ids in position order (empty if it holds none). */
  public int[] blockTable(String requestId) {
    Blocks b = requestIdToBlocks.get(requestId);
    return b == null ? new int[0] : Arrays.copyOf(b.pages, b.size);
  }

  /**
   * Registers the request's full pages within {@code tokens[0, numCacheable)} — tokens whose KV is computed
   * and which later prompts may share — in the prefix cache.
   */
  public void cacheFullPages(String requestId, int[] tokens, int numCacheable) {
    Blocks b = requestIdToBlocks.get(requestId);
    if (!prefixCaching || b == null) return;
    int full = Math.min(numCacheable / pageSize, b.size);
    for (; b.numHashed < full; b.numHashed++) {
      int page = b.pages[b.numHashed];
      var key = new PageKey(b.chainHash, Arrays.copyOfRange(tokens, b.numHashed * pageSize, (b.numHashed + 1) * pageSize));
      if (pageKey[page] == null && !cachedPages.containsKey(key)) { // a twin computed concurrently keeps the entry
        cachedPages.put(key, page);
        pageKey[page] = key;
      }
      b.chainHash = key.chainHash();
    }
  }

  /** Drops the request's hold on its pages, last page first (so its tail is evicted before its shared head). */
  public void free(String requestId) {
    Blocks b = requestIdToBlocks.remove(requestId);
    if (b == null) return;
    for (int i = b.size - 1; i >= 0; i--) {
      int p = b.pages[i];
      if (--refCount[p] > 0) continue;
      if (pageKey[p] != null) evictable.add(p);
      else freePages.add(p);
    }
  }

  public boolean holds(String requestId) {
    return requestIdToBlocks.containsKey(requestId);
  }

  /** Pages a new allocation could get: never-cached ones plus evictable cached ones. */
  public int numAllocatablePages() {
    return freePages.size() + evictable.size();
  }

  public int pageSize() {
    return pageSize;
  }

  public int numPages() {
    return refCount.length;
  }

  public KvCacheUsage usage() {
    int used = refCount.length - freePages.size() - evictable.size();
    return new KvCacheUsage(refCount.length, pageSize, used, evictable.size(), freePages.size(), queriedTokens, hitTokens);
  }

  private int takePage() {
    Integer p = freePages.poll();
    if (p == null) {
      var oldest = evictable.iterator();
      p = oldest.next();
      oldest.remove();
      cachedPages.remove(pageKey[p]);
      pageKey[p] = null;
    }
    refCount[p] = 1;
    return p;
  }
}
