package io.moemesh.planner.observe;

import io.moemesh.planner.Stage;

/**
 * What one stage did over one interval, from two scrapes of each of its replicas. Rates are per second, summed over
 * replicas; the gauges are read at the interval's end.
 *
 * @param replicas          replicas scraped at the interval's end
 * @param requestsPerSecond requests the stage finished its leg of: first tokens on prefill, finished requests on decode
 * @param meanPromptTokens  prompt tokens computed per request (NaN without requests)
 * @param meanOutputTokens  tokens generated per request (NaN without requests)
 * @param ttft              time to first token over the interval (prefill records it)
 * @param itl               inter-token latency over the interval (decode records it)
 * @param queuedPromptTokens prompt tokens waiting to be computed, summed
 * @param kvUsage           KV-cache pages in use, mean over replicas (0..1)
 * @param runningRequests   requests in the running batches, summed
 * @param waitingRequests   requests waiting to be scheduled (or for their KV), summed
 */
public record StageObservation(Stage stage, double seconds, int replicas, double requestsPerSecond,
    double promptTokensPerSecond, double generationTokensPerSecond, double meanPromptTokens, double meanOutputTokens,
    Percentiles ttft, Percentiles itl, double queuedPromptTokens, double kvUsage, double runningRequests,
    double waitingRequests) {

  /** A stage with no replica to scrape. */
  public static StageObservation empty(Stage stage, double seconds) {
    return new StageObservation(stage, seconds, 0, 0, 0, 0, Double.NaN, Double.NaN, Percentiles.NONE, Percentiles.NONE,
        0, 0, 0, 0);
  }
}
