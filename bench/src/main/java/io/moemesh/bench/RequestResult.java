package io.moemesh.bench;

import java.util.List;

/**
 * One streamed request as the client saw it (the figures of vLLM's {@code RequestFuncOutput}).
 *
 * @param ok the stream ended with {@code [DONE]} and carried no error
 * @param error why it failed, or null
 * @param promptTokens prompt tokens sent
 * @param outputTokens completion tokens, from the stream's {@code usage} (else the number of text chunks)
 * @param ttftSeconds request sent → first chunk with text
 * @param itlSeconds the gaps between consecutive chunks with text (a chunk can hold several tokens: a byte-level
 *     piece of a character, or a special token, shows no text until the next token completes it)
 * @param latencySeconds request sent → end of the stream
 */
record RequestResult(boolean ok, String error, int promptTokens, int outputTokens, double ttftSeconds,
    List<Double> itlSeconds, double latencySeconds) {

  static RequestResult failed(int promptTokens, String error, double latencySeconds) {
    return new RequestResult(false, error, promptTokens, 0, 0, List.of(), latencySeconds);
  }

  /**
   * Time per output token after the first, {@code (latency − TTFT) ÷ (outputTokens − 1)}; NaN for a single
   * output token (vLLM leaves such requests out of TPOT).
   */
  double tpotSeconds() {
    return outputTokens > 1 ? (latencySeconds - ttftSeconds) / (outputTokens - 1) : Double.NaN;
  }
}
