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
  /**
   * A cached page's identity: its parent chain hash and its own tokens (compared in full, so no false hits), and
   * with {@code lookahead} keys the token after the page (else -1): the MTP layer's KV at a page's last position is
   * computed from that next token, so a page holding it serves only prompts that continue the same way.
   */
  private record PageKey(long parentHash, int[] tokens, int next) {
    long chainHash() {
      return PageHashes.next(parentHash, tokens, 0, tokens.length);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof PageKey k && k.parentHash == parentHash && k.next == next && Arrays.equals(k.tokens, tokens);
    }

    @Override
    public int hashCode() {
      return (Long.hashCode(parentHash) * 31 + Arrays.hashCode(tokens)) * 31 + next;
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
  private final boolean lookahead;
  private final int[] refCount;                     // (numPages)
  private final PageKey[] pageKey;                  // (numPages) the key a page is cached under, or null
  private final Map<PageKey, Integer> cachedPages = new HashMap<>();
  private final ArrayDeque<Integer> freePages = new ArrayDeque<>();
  private final LinkedHashSet<Integer> evictable = new LinkedHashSet<>(); // cached, unreferenced; oldest first
  private final Map<String, Blocks> requestIdToBlocks = new HashMap<>();
  private long queriedTokens, hitTokens;

  public KvCacheManager(int numPages, int pageSize, String modelId, boolean prefixCaching) {
    this(numPages, pageSize, modelId, prefixCaching, false);
  }

  /**
   * @param lookahead key cached pages by their next token too (MTP speculative decoding: a page's KV of the MTP
   *     layer depends on the token after it); such a page is registered once that token is known
   */
  public KvCacheManager(int numPages, int pageSize, String modelId, boolean prefixCaching, boolean lookahead) {
    this.lookahead = lookahead;
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
      if (lookahead && (n + 1) * pageSize >= tokens.length) break;
      PageKey key = key(chain, tokens, n);
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
    if (lookahead) full = Math.min(full, (tokens.length - 1) / pageSize); // the token after the page is known
    for (; b.numHashed < full; b.numHashed++) {
      int page = b.pages[b.numHashed];
      var key = key(b.chainHash, tokens, b.numHashed);
      if (pageKey[page] == null && !cachedPages.containsKey(key)) { // a twin computed concurrently keeps the entry
        cachedPages.put(key, page);
        pageKey[page] = key;
      }
      b.chainHash = key.chainHash();
    }
  }

  private PageKey key(long parent, int[] tokens, int page) {
    int from = page * pageSize, to = from + pageSize;
    return new PageKey(parent, Arrays.copyOfRange(tokens, from, to), lookahead ? tokens[to] : -1);
  }

  /**
   * Shrinks a request's pages to those covering positions {@code [0, numTokens)}: the pages past them (rejected
   * speculative tokens' KV, lookahead slots) go back to the pool. Pages registered in the prefix cache are kept.
   */
  public void trim(String requestId, int numTokens) {
    Blocks b = requestIdToBlocks.get(requestId);
    if (b == null) return;
    int keep = Math.max(b.numHashed, (numTokens + pageSize - 1) / pageSize);
    while (b.size > keep) {
      int p = b.pages[--b.size];
      if (--refCount[p] > 0) continue;
      if (pageKey[p] != null) evictable.add(p);
      else freePages.add(p);
    }
  }

  /** Pages a request holds. */
  public int numPagesOf(String requestId) {
    Blocks b = requestIdToBlocks.get(requestId);
    return b == null ? 0 : b.size;
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
