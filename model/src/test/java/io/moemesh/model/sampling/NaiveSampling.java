package io.moemesh.model.sampling;

import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.IntStream;

/**
 * The spec the {@link Sampler} is compared against: vLLM's sampling definitions written out naively, with a
 * full sort of the vocabulary and double precision throughout. Slow on purpose; never used in main code.
 */
final class NaiveSampling {
  private NaiveSampling() {}

  /** The probability of each token after penalties, temperature, top-k, top-p and min-p (in that order). */
  static double[] distribution(float[] logits, TokenCounts history, SamplingParams p) {
    int vocab = logits.length;
    double[] z = new double[vocab];
    for (int t = 0; t < vocab; t++) {
      z[t] = penalized(logits[t], history.inPrompt(t), history.generatedCount(t), p);
    }
    double[] probs = new double[vocab];
    Integer[] order = IntStream.range(0, vocab).boxed()
        .sorted(Comparator.<Integer>comparingDouble(t -> -z[t]).thenComparingInt(t -> t))
        .toArray(Integer[]::new);
    if (p.isGreedy()) {
      probs[order[0]] = 1;
      return probs;
    }
    boolean[] kept = new boolean[vocab];
    Arrays.fill(kept, true);
    if (p.topK() > 0 && p.topK() < vocab) {
      double kth = z[order[p.topK() - 1]];
      for (int t = 0; t < vocab; t++) {
        kept[t] = z[t] >= kth;
      }
    }
    softmax(z, kept, p.temperature(), probs);
    if (p.topP() < 1) {
      double before = 0; // mass ranked strictly before the token
      for (int t : order) {
        if (kept[t] && before >= p.topP()) {
          kept[t] = false;
        }
        before += probs[t];
      }
      softmax(z, kept, p.temperature(), probs);
    }
    if (p.minP() > 0) {
      double pMax = probs[order[0]];
      for (int t = 0; t < vocab; t++) {
        kept[t] &= probs[t] >= p.minP() * pMax;
      }
      softmax(z, kept, p.temperature(), probs);
    }
    return probs;
  }

  /** vLLM's apply_penalties for one token, rounded to float as the row holding it is. */
  static float penalized(float logit, boolean inPrompt, int generatedCount, SamplingParams p) {
    double l = logit;
    if (inPrompt || generatedCount > 0) {
      l = l > 0 ? l / p.repetitionPenalty() : l * p.repetitionPenalty();
    }
    l -= p.frequencyPenalty() * generatedCount;
    l -= generatedCount > 0 ? p.presencePenalty() : 0;
    return (float) l;
  }

  /** {@code log_softmax(logits)} in double. */
  static double[] logSoftmax(float[] logits) {
    double max = Double.NEGATIVE_INFINITY;
    for (float l : logits) {
      max = Math.max(max, l);
    }
    double sum = 0;
    for (float l : logits) {
      sum += Math.exp(l - max);
    }
    double logSum = max + Math.log(sum);
    double[] out = new double[logits.length];
    for (int t = 0; t < logits.length; t++) {
      out[t] = logits[t] - logSum;
    }
    return out;
  }

  private static void softmax(double[] z, boolean[] kept, double temperature, double[] out) {
    double max = Double.NEGATIVE_INFINITY;
    for (int t = 0; t < z.length; t++) {
      if (kept[t]) {
        max = Math.max(max, z[t]);
      }
    }
    double sum = 0;
    for (int t = 0; t < z.length; t++) {
      out[t] = kept[t] ? Math.exp((z[t] - max) / temperature) : 0;
      sum += out[t];
    }
    for (int t = 0; t < z.length; t++) {
      out[t] /= sum;
    }
  }
}
