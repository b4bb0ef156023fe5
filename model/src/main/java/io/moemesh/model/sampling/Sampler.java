package io.moemesh.model.sampling;

import java.util.Objects;
import java.util.Optional;
import java.util.SplittableRandom;

/**
 * Picks one request's next tokens from its logits row, in vLLM's order:
 * <pre>
 *   logits ─▶ bias ─▶ penalties ─▶ ÷ temperature ─▶ top-k ─▶ top-p ─▶ min-p ─▶ draw   (temperature &gt; 0)
 *   logits ─▶ bias ─▶ penalties ─▶ argmax, ties to the lowest id                       (temperature = 0)
 *   logits ─▶ log-softmax ─▶ chosen token's logprob + top n                           (if logprobs asked)
 * </pre>
 * <ul>
 *   <li><b>Logit bias</b> (OpenAI's {@code logit_bias}) adds each named token's bias to its logit, first, as
 *       vLLM's logits processors do before the penalties; the sum saturates at ±{@link Float#MAX_VALUE}.
 *   <li><b>Penalties</b> (vLLM {@code apply_penalties}), for every token id t seen in the prompt or the
 *       output: {@code l ← l > 0 ? l / repetition : l · repetition}; then, with {@code c} = times t was
 *       generated, {@code l ← l - frequency · c - presence · [c > 0]}. Prompt-only tokens get the
 *       repetition penalty alone. See {@link #applyPenalties}.
 *   <li><b>Top-k</b> keeps the logits ≥ the k-th largest (ties at the boundary stay); k ≥ vocab is off.
 *   <li><b>Top-p</b> keeps the most likely tokens until their mass reaches top_p; the crossing token stays.
 *   <li><b>Min-p</b> drops tokens with {@code p < min_p · p_max}. This is vLLM V0's place for it, after
 *       top-p; V1 applies min-p before top-k/top-p, which differs only when both top-p and min-p are set.
 *   <li><b>Logprobs</b> are raw: the log-softmax of the logits as passed in, before penalties, temperature
 *       and filters (vLLM's default {@code raw_logprobs}); see {@link SampledToken.Logprobs}.
 * </ul>
 *
 * <p><b>Reproducibility.</b> The random stream belongs to the request: a {@link SplittableRandom} seeded
 * with {@code seed}, or with a fresh random seed when it is null. Each non-greedy sample draws exactly
 * one {@code nextDouble()} and greedy samples draw none, so a request's tokens depend only on its seed
 * and its logits, never on the batch it shares.
 *
 * <p><b>Cost</b> per sample, for vocab V: a few O(V) passes and never a sort of the vocabulary. Greedy
 * is one argmax pass. Sampling takes one {@code exp} per token, skipped for tokens cut by top-k or lying
 * more than 87·T below the top; logprobs take a second exp pass, except at temperature 1 with no penalty
 * and no top-k, where the sampling pass's sum is the softmax denominator. Top-k keeps a heap of k floats;
 * top-p is a radix select over the weights' float bits (see {@link LogitOps#keepNucleus}).
 * {@code sample} never writes to the caller's array: it works on a scratch row of V floats owned by this
 * sampler (≈ 0.5 MB at V = 129280), allocated on first use. Not thread-safe: one sampler per request,
 * one thread at a time.
 */
public final class Sampler {
  private final SamplingParams params;
  private final int vocabSize;
  private final SplittableRandom random;
  private float[] scratch; // (vocabSize) penalized logits, then weights; allocated on first use

  /**
   * A sampler for one request over a vocabulary of {@code vocabSize} tokens.
   *
   * @throws IllegalArgumentException if a stop token id lies outside the vocabulary
   */
  public Sampler(SamplingParams params, int vocabSize) {
    this.params = Objects.requireNonNull(params, "params").validateFor(vocabSize);
    this.vocabSize = vocabSize;
    this.random = params.seed() != null ? new SplittableRandom(params.seed()) : new SplittableRandom();
  }

  /**
   * Advances the random stream past {@code draws} samples taken elsewhere (a prefill engine sampled the first
   * token), so this sampler continues exactly where that one stopped.
   */
  public void skipDraws(int draws) {
    for (int i = 0; i < draws; i++) random.nextDouble();
  }

  public SamplingParams params() {
    return params;
  }

  public int vocabSize() {
    return vocabSize;
  }

  /**
   * Whether the next token is the raw logits' argmax, whatever the history: greedy, without penalties or logprobs.
   * A caller holding that argmax (the kernels' {@code argmaxRows}, -1 for a row without a token) may take it for
   * {@link #sample}'s token and skip copying the row out; the row's errors are {@link #sample}'s to report.
   */
  public boolean takesArgmax() {
    return params.isGreedy() && !params.changesLogits() && params.logprobs() == null;
  }

  /**
   * Samples the next token.
   *
   * @param logits one row of {@code (vocabSize)} logits; read, never written
   * @param history the request's prompt and generated tokens, for the penalties; read, never written
   *     (the engine appends the accepted token afterwards)
   * @throws IllegalArgumentException if the row has the wrong length, holds NaN or +&infin;, is all
   *     -&infin;, or a history token id lies outside the vocabulary
   */
  public SampledToken sample(float[] logits, TokenCounts history) {
    checkRow(logits, history);
    int rawArgmax = LogitOps.argmax(logits); // validates the row too
    int tokenId;
    double logSumExp = Double.NaN; // log Σ exp(logits), if the sampling pass has it for free
    if (params.isGreedy()) {
      tokenId = penalize(logits, history) ? LogitOps.argmax(scratch) : rawArgmax;
    } else {
      Weights weights = weigh(logits, history, rawArgmax);
      tokenId = LogitOps.draw(scratch, weights.total(), random.nextDouble());
      logSumExp = weights.rawLogSumExp();
    }
    if (params.logprobs() == null) {
      return new SampledToken(tokenId, Optional.empty());
    }
    if (Double.isNaN(logSumExp)) {
      logSumExp = RawLogprobs.logSumExp(logits, logits[rawArgmax]);
    }
    return new SampledToken(tokenId, Optional.of(new SampledToken.Logprobs(
        logits[tokenId] - logSumExp, RawLogprobs.top(logits, params.logprobs(), logSumExp))));
  }

  /**
   * A draft token of speculative decoding and the distribution {@code q} it was drawn from: {@code weights[i] / total},
   * or one-hot on {@code tokenId} when {@code weights} is null (a greedy draft).
   */
  public record Draft(int tokenId, float[] weights, double total) {
    /** q(id). */
    public double probability(int id) {
      if (weights == null) return id == tokenId ? 1 : 0;
      return weights[id] / total;
    }
  }

  /**
   * Draws a draft token from these parameters' distribution over {@code logits} (the draft model's), keeping that
   * distribution for {@link #verify}: one-hot on the choice when greedy (no draw), else penalties, temperature and
   * filters as {@link #sample} applies them, and one {@code nextDouble()}.
   */
  public Draft draft(float[] logits, TokenCounts history) {
    checkRow(logits, history);
    int rawArgmax = LogitOps.argmax(logits);
    if (params.isGreedy()) return new Draft(penalize(logits, history) ? LogitOps.argmax(scratch) : rawArgmax, null, 1);
    double total = weigh(logits, history, rawArgmax).total();
    int tokenId = LogitOps.draw(scratch, total, random.nextDouble());
    return new Draft(tokenId, scratch.clone(), total);
  }

  /** What {@link #verify} decided at one position: the token to emit there, and whether it is the draft. */
  public record Verdict(SampledToken token, boolean accepted) {}

  /**
   * Speculative decoding's verification of one draft token against the target model's {@code logits} at its
   * position (with {@code history} holding every token before it), keeping the target distribution p exact:
   * <ul>
   *   <li>greedy: the draft is accepted when it is the token {@link #sample} would pick; otherwise that token replaces
   *       it. No draw.
   *   <li>otherwise (rejection sampling, Leviathan et al. 2023; vLLM's {@code rejection_sampler}): accept the draft d
   *       with probability {@code min(1, p(d) / q(d))} (one {@code nextDouble()}); on rejection draw the replacement
   *       from {@code norm(max(0, p − q))} (a second {@code nextDouble()}). With a one-hot q (greedy draft) this accepts
   *       d with probability p(d) and otherwise draws from p without d.
   * </ul>
   * Logprobs, when asked for, are the raw ones of the emitted token, as {@link #sample} gives them.
   */
  public Verdict verify(float[] logits, TokenCounts history, Draft draft) {
    checkRow(logits, history);
    int rawArgmax = LogitOps.argmax(logits);
    int d = draft.tokenId();
    if (d < 0 || d >= vocabSize) throw new IllegalArgumentException("draft token " + d + " is outside the vocabulary [0, " + vocabSize + ")");
    int tokenId;
    boolean accepted;
    if (params.isGreedy()) {
      tokenId = penalize(logits, history) ? LogitOps.argmax(scratch) : rawArgmax;
      accepted = tokenId == d;
    } else {
      Weights weights = weigh(logits, history, rawArgmax);
      double total = weights.total();
      double p = scratch[d] / total, q = draft.probability(d);
      accepted = q > 0 && random.nextDouble() * q < p; // u < p / q, u in [0, 1)
      if (accepted) {
        tokenId = d;
      } else {
        double residual = 0;
        for (int i = 0; i < vocabSize; i++) {
          float r = (float) Math.max(0, scratch[i] / total - draft.probability(i));
          scratch[i] = r;
          residual += r;
        }
        double u = random.nextDouble();
        if (residual > 0) {
          tokenId = LogitOps.draw(scratch, residual, u);
        } else { // p == q to rounding: rejection was a rounding accident, p itself is the residual
          tokenId = LogitOps.draw(scratch, weigh(logits, history, rawArgmax).total(), u);
        }
      }
    }
    if (params.logprobs() == null) return new Verdict(new SampledToken(tokenId, Optional.empty()), accepted);
    double logSumExp = RawLogprobs.logSumExp(logits, logits[rawArgmax]);
    return new Verdict(new SampledToken(tokenId, Optional.of(new SampledToken.Logprobs(
        logits[tokenId] - logSumExp, RawLogprobs.top(logits, params.logprobs(), logSumExp)))), accepted);
  }

  /**
   * The normalized distribution the next draw uses (one-hot on the argmax when greedy). For tests and
   * diagnostics; draws no randomness.
   */
  public double[] probabilities(float[] logits, TokenCounts history) {
    checkRow(logits, history);
    int rawArgmax = LogitOps.argmax(logits);
    double[] p = new double[vocabSize];
    if (params.isGreedy()) {
      p[penalize(logits, history) ? LogitOps.argmax(scratch) : rawArgmax] = 1;
      return p;
    }
    double total = weigh(logits, history, rawArgmax).total();
    for (int i = 0; i < vocabSize; i++) {
      p[i] = scratch[i] / total;
    }
    return p;
  }

  /**
   * Applies the penalties to one row in place, as vLLM's {@code apply_penalties} does, for each distinct
   * token t of {@code history} (c = times t was generated; prompt-only tokens have c = 0):
   * <pre>
   *   l[t] ← l[t] &gt; 0 ? l[t] / repetition_penalty : l[t] · repetition_penalty
   *   l[t] ← l[t] - frequency_penalty · c - presence_penalty · (c &gt; 0 ? 1 : 0)
   * </pre>
   * computed in double and rounded once to float; a result beyond the float range saturates at
   * ±{@link Float#MAX_VALUE} so the row stays finite. Tokens never seen are untouched.
   */
  static void applyPenalties(float[] logits, TokenCounts history, SamplingParams params) {
    double repetition = params.repetitionPenalty();
    for (int i = 0; i < history.numDistinctTokens(); i++) {
      int tokenId = history.tokenIdAt(i);
      if (tokenId >= logits.length) {
        throw new IllegalArgumentException(
            "history token id " + tokenId + " is outside the vocabulary [0, " + logits.length + ")");
      }
      int count = history.generatedCountAt(i);
      double l = logits[tokenId];
      l = l > 0 ? l / repetition : l * repetition;
      l -= params.frequencyPenalty() * count;
      if (count > 0) {
        l -= params.presencePenalty();
      }
      if (l != Double.NEGATIVE_INFINITY) {
        l = Math.max(-Float.MAX_VALUE, Math.min(Float.MAX_VALUE, l));
      }
      logits[tokenId] = (float) l;
    }
  }

  /** Biases and penalizes a copy of the row into scratch; false (and scratch untouched) when nothing applies. */
  private boolean penalize(float[] logits, TokenCounts history) {
    boolean penalties = params.usesPenalties() && history.numDistinctTokens() > 0;
    if (!penalties && params.logitBias().isEmpty()) {
      return false;
    }
    float[] x = scratch();
    System.arraycopy(logits, 0, x, 0, vocabSize);
    for (var bias : params.logitBias().entrySet()) {
      int t = bias.getKey();
      if (x[t] != Float.NEGATIVE_INFINITY) x[t] = (float) Math.clamp((double) x[t] + bias.getValue(), -Float.MAX_VALUE, Float.MAX_VALUE);
    }
    if (penalties) applyPenalties(x, history, params);
    return true;
  }

  /**
   * The sum of the final weights, and {@code log Σ exp(logits)} when the first weights were exactly the raw
   * softmax numerators (temperature 1, no penalty applied, no top-k), else NaN.
   */
  private record Weights(double total, double rawLogSumExp) {}

  /** Penalties, temperature, top-k, top-p, min-p: leaves the final weights in scratch. */
  private Weights weigh(float[] logits, TokenCounts history, int rawArgmax) {
    boolean penalized = penalize(logits, history);
    float[] x = penalized ? scratch : logits; // read-only when it is the caller's row
    float max = penalized ? scratch[LogitOps.argmax(scratch)] : logits[rawArgmax];
    int topK = params.topK();
    boolean topKOn = topK > 0 && topK < vocabSize;
    float floor = topKOn ? LogitOps.kthLargest(x, topK) : Float.NEGATIVE_INFINITY;
    float[] w = scratch();
    double total = LogitOps.toWeights(x, max, params.temperature(), floor, w);
    boolean rawSoftmax = !penalized && !topKOn && params.temperature() == 1;
    double rawLogSumExp = rawSoftmax ? max + Math.log(total) : Double.NaN;
    if (params.topP() < 1) {
      total = LogitOps.keepNucleus(w, total, params.topP());
    }
    if (params.minP() > 0) {
      total = LogitOps.keepAtLeast(w, params.minP());
    }
    return new Weights(total, rawLogSumExp);
  }

  private void checkRow(float[] logits, TokenCounts history) {
    Objects.requireNonNull(logits, "logits");
    Objects.requireNonNull(history, "history");
    if (logits.length != vocabSize) {
      throw new IllegalArgumentException(
          "logits has " + logits.length + " entries, expected the vocabulary size " + vocabSize);
    }
  }

  private float[] scratch() {
    if (scratch == null) {
      scratch = new float[vocabSize];
    }
    return scratch;
  }

  @Override
  public String toString() {
    return "Sampler[vocabSize=" + vocabSize + ", " + params + "]";
  }
}
