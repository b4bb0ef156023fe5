package io.moemesh.engine.kv;

import java.nio.charset.StandardCharsets;

/**
 * The prefix-cache key of a full page: a hash chain over token ids, seeded with the model id, so a page's
 * hash names its tokens <em>and</em> every token before them. The same function names pages in the engine's
 * cache, in kv-store objects and in the gateway's prefix-aware routing.
 * <pre>
 *   h₀ = mix(fnv1a(modelId))          h_{i+1} = fold(h_i, tokens of page i),   fold(h, t) = mix(h ⊕ (t + γ))
 * </pre>
 * with {@code mix} the SplitMix64 finalizer. 64 bits: the cache also compares a page's tokens, so a collision
 * would need equal tokens under colliding parent chains.
 */
public final class PageHashes {
  private static final long GOLDEN = 0x9E3779B97F4A7C15L;

  private PageHashes() {}

  public static long seed(String modelId) {
    long h = 0xcbf29ce484222325L;
    for (byte b : modelId.getBytes(StandardCharsets.UTF_8)) h = (h ^ (b & 0xff)) * 0x100000001b3L;
    return mix(h);
  }

  /** The chain hash after a page holding {@code tokens[from, from + pageSize)}. */
  public static long next(long parent, int[] tokens, int from, int pageSize) {
    long h = parent;
    for (int i = from; i < from + pageSize; i++) h = mix(h ^ (tokens[i] + GOLDEN));
    return h;
  }

  /** The chain hashes of the first {@code numPages} full pages of {@code tokens}. */
  public static long[] chain(String modelId, int[] tokens, int pageSize, int numPages) {
    if ((long) numPages * pageSize > tokens.length)
      throw new IllegalArgumentException(numPages + " pages of " + pageSize + " need more than " + tokens.length + " tokens");
    long[] out = new long[numPages];
    long h = seed(modelId);
    for (int p = 0; p < numPages; p++) out[p] = h = next(h, tokens, p * pageSize, pageSize);
    return out;
  }

  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
