package io.moemesh.bench;

import io.moemesh.tokenizer.Tokenizer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * vLLM's random dataset, sent as token ids: each prompt is {@code length} ids drawn uniformly from the model's
 * ordinary vocabulary (no special token, so no stray BOS or EOS), so the server sees exactly {@code length}
 * prompt tokens — no decode-and-retokenize drift. Random prompts share no prefix, so no prefix-cache hit helps —
 * unless they are given one ({@link #withPrefix}).
 */
final class RandomPrompts {
  private RandomPrompts() {}

  /** The ids a prompt may use: every id that has a token and is not special. */
  static int[] ordinaryIds(Tokenizer tokenizer) {
    return IntStream.range(0, tokenizer.vocabSize())
        .filter(id -> !tokenizer.isSpecial(id) && tokenizer.idToToken(id).isPresent()).toArray();
  }

  /** {@code prefix} followed by each prompt's own ids: prompts that share a prefix (vLLM's {@code --random-prefix-len}). */
  static List<int[]> withPrefix(int[] prefix, List<int[]> prompts) {
    List<int[]> out = new ArrayList<>(prompts.size());
    for (int[] p : prompts) {
      int[] joined = java.util.Arrays.copyOf(prefix, prefix.length + p.length);
      System.arraycopy(p, 0, joined, prefix.length, p.length);
      out.add(joined);
    }
    return out;
  }

  /** {@code count} prompts of {@code length} ids from {@code ids}; the same seed gives the same prompts. */
  static List<int[]> draw(int[] ids, int count, int length, long seed) {
    if (ids.length == 0) throw new IllegalArgumentException("no ordinary token ids to draw prompts from");
    var random = new SplittableRandom(seed);
    List<int[]> prompts = new ArrayList<>(count);
    for (int i = 0; i < count; i++) prompts.add(random.ints(length, 0, ids.length).map(j -> ids[j]).toArray());
    return prompts;
  }
}
