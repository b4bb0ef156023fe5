package io.moemesh.tokenizer;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.TreeMap;

/**
 * Learns byte-level BPE merges from text, deterministically: the corpus is cut into words by {@link PreTokenizer},
 * each word starts as its UTF-8 bytes (as {@link ByteLevel} chars), and the most frequent adjacent pair is merged
 * again and again. Ties go to the pair whose left token, then right token, sorts first as a string, so the same
 * corpus always yields the same merges in the same order. Training stops at the first pair seen fewer than
 * {@code minFrequency} times.
 *
 * <p>Since each merge is chosen greedily, training with a smaller budget yields a prefix of the merges of a larger
 * one; {@link Result#truncate} exploits that, so one training run serves every vocabulary size.
 */
public final class BpeTrainer {
  /** One learned merge: {@code left + right} becomes one token; {@code newToken} is false if it already existed. */
  public record Merge(String left, String right, boolean newToken) {}

  /**
   * Learned vocabulary: {@code tokens} in id order (the 256 byte tokens in byte order, then each new merged token)
   * and {@code merges} in rank order.
   */
  public record Result(List<String> tokens, List<Merge> merges) {
    public Result {
      tokens = List.copyOf(tokens);
      merges = List.copyOf(merges);
    }

    /** The prefix of this training that adds at most {@code maxNewTokens} tokens beyond the 256 bytes. */
    public Result truncate(int maxNewTokens) {
      int newTokens = Math.min(maxNewTokens, tokens.size() - 256);
      List<Merge> kept = new ArrayList<>();
      int seen = 0;
      for (Merge m : merges) {
        if (m.newToken() && seen == newTokens) break;
        if (m.newToken()) seen++;
        kept.add(m);
      }
      return new Result(tokens.subList(0, 256 + newTokens), kept);
    }
  }

  private record Candidate(long count, int left, int right) {}

  private final List<String> vocab = new ArrayList<>();
  private final Map<String, Integer> tokenToId = new HashMap<>();
  private final List<int[]> words = new ArrayList<>(); // each word's current symbols
  private final List<Long> wordCounts = new ArrayList<>();
  private final Map<Long, Long> pairCounts = new HashMap<>();
  private final Map<Long, Set<Integer>> pairToWords = new HashMap<>();
  private final PriorityQueue<Candidate> queue;

  private BpeTrainer() {
    for (int b = 0; b < 256; b++) addToken(String.valueOf(ByteLevel.charOf(b)));
    Comparator<Candidate> order =
        Comparator.comparingLong(Candidate::count).reversed()
            .thenComparing(c -> vocab.get(c.left()))
            .thenComparing(c -> vocab.get(c.right()));
    queue = new PriorityQueue<>(order);
  }

  /**
   * Trains on the given texts until no pair occurs {@code minFrequency} times, or {@code maxNewTokens} tokens
   * have been added.
   */
  public static Result train(List<String> texts, int minFrequency, int maxNewTokens) {
    BpeTrainer t = new BpeTrainer();
    t.countWords(texts);
    return t.run(minFrequency, maxNewTokens);
  }

  private int addToken(String token) {
    Integer id = tokenToId.get(token);
    if (id != null) return id;
    vocab.add(token);
    tokenToId.put(token, vocab.size() - 1);
    return vocab.size() - 1;
  }

  private void countWords(List<String> texts) {
    Map<String, Long> counts = new TreeMap<>(); // sorted: word order never depends on hashing
    for (String text : texts) {
      for (String piece : PreTokenizer.split(text)) counts.merge(ByteLevel.encode(piece), 1L, Long::sum);
    }
    for (Map.Entry<String, Long> e : counts.entrySet()) {
      String w = e.getKey();
      int[] symbols = new int[w.length()];
      for (int i = 0; i < symbols.length; i++) symbols[i] = tokenToId.get(String.valueOf(w.charAt(i)));
      words.add(symbols);
      wordCounts.add(e.getValue());
      addPairs(words.size() - 1, +1);
    }
    for (Map.Entry<Long, Long> e : pairCounts.entrySet()) push(e.getKey(), e.getValue());
  }

  /**
   * A pair as one long: left in the high half, right scrambled with left in the low half, so that
   * {@link Long#hashCode()} (high ^ low) spreads; plain {@code left << 32 | right} gives left ^ right, which
   * collides so often for small ids that HashMap buckets degrade into trees (10x slower training).
   */
  private static long key(int left, int right) {
    return ((long) left << 32) | ((right ^ left * 0x9E3779B1) & 0xFFFFFFFFL);
  }

  private static int left(long pair) {
    return (int) (pair >>> 32);
  }

  private static int right(long pair) {
    return (int) pair ^ left(pair) * 0x9E3779B1;
  }

  private void push(long pair, long count) {
    if (count > 0) queue.add(new Candidate(count, left(pair), right(pair)));
  }

  /** Adds (sign +1) or removes (sign -1) the word's adjacent pairs from the counts. */
  private void addPairs(int wordId, int sign) {
    int[] symbols = words.get(wordId);
    long count = wordCounts.get(wordId) * sign;
    for (int i = 0; i + 1 < symbols.length; i++) {
      long pair = key(symbols[i], symbols[i + 1]);
      pairCounts.merge(pair, count, Long::sum);
      if (sign > 0) pairToWords.computeIfAbsent(pair, k -> new HashSet<>()).add(wordId);
    }
  }

  private Result run(int minFrequency, int maxNewTokens) {
    List<Merge> merges = new ArrayList<>();
    Set<Long> merged = new HashSet<>();
    while (vocab.size() - 256 < maxNewTokens && !queue.isEmpty()) {
      Candidate best = queue.poll();
      long pair = key(best.left(), best.right());
      if (pairCounts.getOrDefault(pair, 0L) != best.count()) continue; // stale entry
      if (best.count() < minFrequency) break;
      int before = vocab.size();
      int newId = addToken(vocab.get(best.left()) + vocab.get(best.right()));
      if (merged.add(pair)) {
        merges.add(new Merge(vocab.get(best.left()), vocab.get(best.right()), vocab.size() > before));
      }
      applyMerge(pair, best.left(), best.right(), newId);
    }
    return new Result(vocab, merges);
  }

  private void applyMerge(long pair, int left, int right, int newId) {
    Set<Integer> wordIds = pairToWords.remove(pair);
    if (wordIds == null) return;
    Map<Long, Long> countBefore = new HashMap<>(); // pair -> its count before this merge
    for (int wordId : wordIds) {
      int[] symbols = words.get(wordId);
      int[] merged = mergeSymbols(symbols, left, right, newId);
      if (merged.length == symbols.length) continue; // stale: the word no longer holds the pair
      recordBefore(symbols, countBefore);
      recordBefore(merged, countBefore);
      addPairs(wordId, -1);
      words.set(wordId, merged);
      addPairs(wordId, +1);
    }
    for (Map.Entry<Long, Long> e : countBefore.entrySet()) {
      long count = pairCounts.getOrDefault(e.getKey(), 0L);
      if (count == 0) pairCounts.remove(e.getKey());
      if (count != e.getValue()) push(e.getKey(), count);
    }
  }

  private void recordBefore(int[] symbols, Map<Long, Long> countBefore) {
    for (int i = 0; i + 1 < symbols.length; i++) {
      long pair = key(symbols[i], symbols[i + 1]);
      countBefore.putIfAbsent(pair, pairCounts.getOrDefault(pair, 0L));
    }
  }

  /** Merges non-overlapping occurrences of (left, right), left to right, as Hugging Face's BPE does. */
  private static int[] mergeSymbols(int[] symbols, int left, int right, int newId) {
    int[] out = new int[symbols.length];
    int n = 0;
    for (int i = 0; i < symbols.length; i++) {
      if (i + 1 < symbols.length && symbols[i] == left && symbols[i + 1] == right) {
        out[n++] = newId;
        i++;
      } else {
        out[n++] = symbols[i];
      }
    }
    return java.util.Arrays.copyOf(out, n);
  }
}
