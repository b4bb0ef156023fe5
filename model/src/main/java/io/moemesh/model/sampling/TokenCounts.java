package io.moemesh.model.sampling;

import java.util.Arrays;

/**
 * The token ids one request has seen, counted for the penalties: which ids occur in the prompt and how
 * often each id has been generated.
 *
 * <p>Append-only and owned by its request (not thread-safe). Adding a token is O(1) amortised; the
 * distinct ids are kept densely in first-seen order so the penalty pass costs O(distinct ids), never
 * O(vocab). Memory is about 16 bytes per distinct id. The engine appends each accepted token with
 * {@link #addGenerated}; the {@link Sampler} only reads.
 */
public final class TokenCounts {
  private static final int EMPTY = -1;

  // Dense, indexed by first-seen order: (numDistinct)
  private int[] tokenIds = new int[16];
  private int[] generatedCounts = new int[16];
  private boolean[] inPrompt = new boolean[16];
  private int numDistinct;
  // Open addressing, linear probing, power-of-two capacity, load <= 1/2: slot -> dense index or EMPTY.
  private int[] slotToIndex = filled(32);
  private int numPromptTokens;
  private int numGeneratedTokens;

  /** An empty history: no prompt, nothing generated. */
  public TokenCounts() {}

  /** A history holding the given prompt. */
  public static TokenCounts ofPrompt(int... promptTokenIds) {
    TokenCounts counts = new TokenCounts();
    counts.addPrompt(promptTokenIds);
    return counts;
  }

  /** An independent copy (speculative verification counts draft tokens into it without touching the request's). */
  public TokenCounts copy() {
    TokenCounts c = new TokenCounts();
    c.tokenIds = tokenIds.clone();
    c.generatedCounts = generatedCounts.clone();
    c.inPrompt = inPrompt.clone();
    c.numDistinct = numDistinct;
    c.slotToIndex = slotToIndex.clone();
    c.numPromptTokens = numPromptTokens;
    c.numGeneratedTokens = numGeneratedTokens;
    return c;
  }

  /** Appends prompt tokens (e.g. one prefill chunk at a time). */
  public void addPrompt(int... tokenIds) {
    for (int tokenId : tokenIds) {
      checkId(tokenId); // all or nothing
    }
    for (int tokenId : tokenIds) {
      int index = indexOf(tokenId); // before indexing: indexOf may grow the arrays
      inPrompt[index] = true;
      numPromptTokens++;
    }
  }

  /** Appends one generated (output) token. */
  public void addGenerated(int tokenId) {
    int index = indexOf(tokenId);
    generatedCounts[index]++;
    numGeneratedTokens++;
  }

  public int numPromptTokens() {
    return numPromptTokens;
  }

  public int numGeneratedTokens() {
    return numGeneratedTokens;
  }

  /** The number of distinct ids in prompt and output together. */
  public int numDistinctTokens() {
    return numDistinct;
  }

  /** How often {@code tokenId} has been generated (0 if never). */
  public int generatedCount(int tokenId) {
    int index = find(tokenId);
    return index == EMPTY ? 0 : generatedCounts[index];
  }

  /** True when {@code tokenId} occurs in the prompt. */
  public boolean inPrompt(int tokenId) {
    int index = find(tokenId);
    return index != EMPTY && inPrompt[index];
  }

  // Dense access for the penalty pass; i in [0, numDistinctTokens()).
  int tokenIdAt(int i) {
    return tokenIds[i];
  }

  int generatedCountAt(int i) {
    return generatedCounts[i];
  }

  @Override
  public String toString() {
    return "TokenCounts[prompt=" + numPromptTokens + ", generated=" + numGeneratedTokens
        + ", distinct=" + numDistinct + "]";
  }

  /** The dense index of {@code tokenId}, inserting it if new. */
  private int indexOf(int tokenId) {
    checkId(tokenId);
    int mask = slotToIndex.length - 1;
    int slot = hash(tokenId) & mask;
    while (slotToIndex[slot] != EMPTY) {
      if (tokenIds[slotToIndex[slot]] == tokenId) {
        return slotToIndex[slot];
      }
      slot = (slot + 1) & mask;
    }
    if (numDistinct == tokenIds.length) {
      tokenIds = Arrays.copyOf(tokenIds, numDistinct * 2);
      generatedCounts = Arrays.copyOf(generatedCounts, numDistinct * 2);
      inPrompt = Arrays.copyOf(inPrompt, numDistinct * 2);
    }
    int index = numDistinct++;
    tokenIds[index] = tokenId;
    slotToIndex[slot] = index;
    if (2 * numDistinct > slotToIndex.length) {
      rehash(slotToIndex.length * 2);
    }
    return index;
  }

  private int find(int tokenId) {
    int mask = slotToIndex.length - 1;
    for (int slot = hash(tokenId) & mask; slotToIndex[slot] != EMPTY; slot = (slot + 1) & mask) {
      if (tokenIds[slotToIndex[slot]] == tokenId) {
        return slotToIndex[slot];
      }
    }
    return EMPTY;
  }

  private void rehash(int capacity) {
    slotToIndex = filled(capacity);
    int mask = capacity - 1;
    for (int index = 0; index < numDistinct; index++) {
      int slot = hash(tokenIds[index]) & mask;
      while (slotToIndex[slot] != EMPTY) {
        slot = (slot + 1) & mask;
      }
      slotToIndex[slot] = index;
    }
  }

  private static void checkId(int tokenId) {
    if (tokenId < 0) {
      throw new IllegalArgumentException("token id must be non-negative, got " + tokenId);
    }
  }

  private static int hash(int tokenId) {
    int h = tokenId * 0x9E3779B9; // Fibonacci hashing: spreads consecutive ids over the table
    return h ^ (h >>> 16);
  }

  private static int[] filled(int capacity) {
    int[] slots = new int[capacity];
    Arrays.fill(slots, EMPTY);
    return slots;
  }
}
