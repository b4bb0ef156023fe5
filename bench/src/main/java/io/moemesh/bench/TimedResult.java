package io.moemesh.bench;

/**
 * A measured request placed in the run: when it was sent (seconds from the run's start; an open loop's request
 * waiting for a free slot under {@code --concurrency} is sent when it gets one) and the ramp phase it arrived in
 * (0 without a ramp).
 */
record TimedResult(double sentSeconds, int phase, RequestResult result) {
  double endSeconds() {
    return sentSeconds + result.latencySeconds();
  }
}
