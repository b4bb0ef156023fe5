package io.moemesh.model.sampling;

import java.util.Map;
import java.util.Set;

/**
 * How one request picks its next token: the OpenAI / vLLM sampling parameters, validated on construction.
 *
 * <p>Ranges follow vLLM's {@code SamplingParams._verify_args}, and error messages use the wire names
 * ({@code top_p}, not {@code topP}), because they end up in the HTTP 400 the client sees:
 * <pre>
 *   parameter           range                         off / default
 *   temperature         [0, 2]                        1.0;  0 = greedy (argmax, ties to the lowest id)
 *   top_p               (0, 1]                        1.0
 *   top_k               -1, 0, or &ge; 1             0 (-1 is accepted and stored as 0)
 *   min_p               [0, 1]                        0.0
 *   presence_penalty    [-2, 2]                       0.0
 *   frequency_penalty   [-2, 2]                       0.0
 *   repetition_penalty  (0, &infin;), finite          1.0
 *   seed                any long, or null             null = a random seed per request
 *   stop_token_ids      ids &ge; 0 (&lt; vocab: {@link #validateFor}) empty
 *   logprobs            null, or [0, 20]              null = none; n = chosen token + the n most likely
 *   ignore_eos          boolean                       false
 *   logit_bias          token id &rarr; [-100, 100],  empty
 *                       at most 1024 ids (&lt; vocab: {@link #validateFor})
 * </pre>
 * Unlike vLLM, a temperature in (0, 0.01) is not raised to 0.01: the sampler works in double precision
 * after subtracting the maximum, so small temperatures are exact rather than a NaN risk.
 * {@code stop_token_ids} and {@code ignore_eos} are carried for the engine, which decides when a request
 * stops; the {@link Sampler} itself never looks at them.
 *
 * <p>Build with {@link #builder()} or {@link #toBuilder()}; {@link #greedy()} is the deterministic default.
 */
public record SamplingParams(
    double temperature,
    double topP,
    int topK,
    double minP,
    double presencePenalty,
    double frequencyPenalty,
    double repetitionPenalty,
    Long seed,
    Set<Integer> stopTokenIds,
    Integer logprobs,
    boolean ignoreEos,
    Map<Integer, Float> logitBias) {

  /** The largest {@code temperature} accepted (OpenAI's and vLLM's bound). */
  public static final double MAX_TEMPERATURE = 2.0;
  /** The bound of {@code presence_penalty} and {@code frequency_penalty}: both lie in [-2, 2]. */
  public static final double MAX_PENALTY = 2.0;
  /** The most top logprobs a request may ask for (vLLM's default {@code max_logprobs}). */
  public static final int MAX_LOGPROBS = 20;
  /** The bound of a {@code logit_bias} value (OpenAI's): every bias lies in [-100, 100]. */
  public static final float MAX_LOGIT_BIAS = 100;
  /** The most token ids one {@code logit_bias} may name. */
  public static final int MAX_LOGIT_BIAS_TOKENS = 1024;

  /** Validates every parameter; {@code top_k = -1} is normalized to 0 and the stop ids are copied. */
  public SamplingParams {
    if (!(temperature >= 0 && temperature <= MAX_TEMPERATURE)) {
      throw invalid("temperature must be in [0, 2] (0 = greedy), got " + temperature);
    }
    if (!(topP > 0 && topP <= 1)) {
      throw invalid("top_p must be in (0, 1], got " + topP);
    }
    if (topK < -1) {
      throw invalid("top_k must be -1 or 0 (disabled) or at least 1, got " + topK);
    }
    if (!(minP >= 0 && minP <= 1)) {
      throw invalid("min_p must be in [0, 1], got " + minP);
    }
    checkPenalty("presence_penalty", presencePenalty);
    checkPenalty("frequency_penalty", frequencyPenalty);
    if (!(repetitionPenalty > 0 && repetitionPenalty < Double.POSITIVE_INFINITY)) {
      throw invalid("repetition_penalty must be a finite number greater than 0 (1 = disabled), got "
          + repetitionPenalty);
    }
    if (logprobs != null && (logprobs < 0 || logprobs > MAX_LOGPROBS)) {
      throw invalid("logprobs must be in [0, " + MAX_LOGPROBS + "] or absent, got " + logprobs);
    }
    if (stopTokenIds == null) {
      throw invalid("stop_token_ids must not be null (use an empty set)");
    }
    for (Integer id : stopTokenIds) {
      if (id == null || id < 0) {
        throw invalid("stop_token_ids must contain only non-negative token ids, got " + id);
      }
    }
    stopTokenIds = Set.copyOf(stopTokenIds);
    if (logitBias == null) {
      throw invalid("logit_bias must not be null (use an empty map)");
    }
    if (logitBias.size() > MAX_LOGIT_BIAS_TOKENS) {
      throw invalid("logit_bias may name at most " + MAX_LOGIT_BIAS_TOKENS + " token ids, got " + logitBias.size());
    }
    for (var e : logitBias.entrySet()) {
      if (e.getKey() == null || e.getKey() < 0) {
        throw invalid("logit_bias keys must be non-negative token ids, got " + e.getKey());
      }
      Float bias = e.getValue();
      if (bias == null || !(bias >= -MAX_LOGIT_BIAS && bias <= MAX_LOGIT_BIAS)) {
        throw invalid("logit_bias values must be in [-100, 100], got " + bias + " for token " + e.getKey());
      }
    }
    logitBias = Map.copyOf(logitBias);
    topK = topK == -1 ? 0 : topK;
  }

  /** Greedy decoding: temperature 0, every filter and penalty off, no logprobs. */
  public static SamplingParams greedy() {
    return builder().temperature(0).build();
  }

  /** A builder holding vLLM's defaults (temperature 1, every filter and penalty off). */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder initialized from this instance, for deriving a variant. */
  public Builder toBuilder() {
    return new Builder().temperature(temperature).topP(topP).topK(topK).minP(minP)
        .presencePenalty(presencePenalty).frequencyPenalty(frequencyPenalty)
        .repetitionPenalty(repetitionPenalty).seed(seed).stopTokenIds(stopTokenIds)
        .logprobs(logprobs).ignoreEos(ignoreEos).logitBias(logitBias);
  }

  /**
   * Checks the parameters that depend on the model: every stop token id and logit_bias id must lie in [0, vocabSize).
   *
   * @return this, for chaining
   * @throws IllegalArgumentException naming {@code stop_token_ids} or {@code logit_bias} and the offending id
   */
  public SamplingParams validateFor(int vocabSize) {
    if (vocabSize < 1) {
      throw invalid("vocabSize must be at least 1, got " + vocabSize);
    }
    for (int id : stopTokenIds) {
      if (id >= vocabSize) {
        throw invalid("stop_token_ids contains " + id + ", outside the vocabulary [0, " + vocabSize + ")");
      }
    }
    for (int id : logitBias.keySet()) {
      if (id >= vocabSize) {
        throw invalid("logit_bias names token " + id + ", outside the vocabulary [0, " + vocabSize + ")");
      }
    }
    return this;
  }

  /** True when the next token is the argmax ({@code temperature == 0}); no randomness is drawn. */
  public boolean isGreedy() {
    return temperature == 0;
  }

  /** True when the logits are changed before sampling: a logit bias, or a penalty on a token seen. */
  public boolean changesLogits() {
    return usesPenalties() || !logitBias.isEmpty();
  }

  /** True when any of the three penalties would change a logit. */
  public boolean usesPenalties() {
    return presencePenalty != 0 || frequencyPenalty != 0 || repetitionPenalty != 1;
  }

  private static void checkPenalty(String name, double value) {
    if (!(value >= -MAX_PENALTY && value <= MAX_PENALTY)) {
      throw invalid(name + " must be in [-2, 2], got " + value);
    }
  }

  private static IllegalArgumentException invalid(String message) {
    return new IllegalArgumentException(message);
  }

  /** Mutable builder; {@link #build()} validates. Setter names mirror the record components. */
  public static final class Builder {
    private double temperature = 1.0;
    private double topP = 1.0;
    private int topK = 0;
    private double minP = 0.0;
    private double presencePenalty = 0.0;
    private double frequencyPenalty = 0.0;
    private double repetitionPenalty = 1.0;
    private Long seed;
    private Set<Integer> stopTokenIds = Set.of();
    private Integer logprobs;
    private boolean ignoreEos;
    private Map<Integer, Float> logitBias = Map.of();

    private Builder() {}

    public Builder temperature(double temperature) { this.temperature = temperature; return this; }

    public Builder topP(double topP) { this.topP = topP; return this; }

    public Builder topK(int topK) { this.topK = topK; return this; }

    public Builder minP(double minP) { this.minP = minP; return this; }

    public Builder presencePenalty(double penalty) { this.presencePenalty = penalty; return this; }

    public Builder frequencyPenalty(double penalty) { this.frequencyPenalty = penalty; return this; }

    public Builder repetitionPenalty(double penalty) { this.repetitionPenalty = penalty; return this; }

    /** The request's seed; null (the default) draws a fresh random seed per {@link Sampler}. */
    public Builder seed(Long seed) { this.seed = seed; return this; }

    public Builder stopTokenIds(Set<Integer> ids) { this.stopTokenIds = ids; return this; }

    /** Null (the default) returns no logprobs; n in [0, 20] returns the chosen token's and the top n. */
    public Builder logprobs(Integer logprobs) { this.logprobs = logprobs; return this; }

    public Builder ignoreEos(boolean ignoreEos) { this.ignoreEos = ignoreEos; return this; }

    /** Added to the named tokens' logits before penalties and sampling (OpenAI's {@code logit_bias}). */
    public Builder logitBias(Map<Integer, Float> bias) { this.logitBias = bias; return this; }

    public SamplingParams build() {
      return new SamplingParams(temperature, topP, topK, minP, presencePenalty, frequencyPenalty,
          repetitionPenalty, seed, stopTokenIds, logprobs, ignoreEos, logitBias);
    }
  }
}
