package io.moemesh.planner.observe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.moemesh.planner.Stage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Recorded {@code /q/metrics} text (src/test/resources/scrapes): Micrometer 1.16.3's Prometheus registry, as Quarkus
 * serves it, with the engine's meters as EngineMetrics registers them (vLLM's names, buckets and model_name label),
 * 10 s apart. Prefill's interval: 50 first tokens of 400 prompt tokens each, 30 at 0.2 s, 15 at 0.6 s, 5 at 3 s.
 * Decode's: 40 requests finished, 4000 tokens, 3000 gaps of 40 ms, 900 of 90 ms, 100 of 250 ms.
 */
class StageObserverTest {
  static final Instant T0 = Instant.parse("2026-12-07T13:00:00Z");
  static final Instant T1 = T0.plusSeconds(10);

  static Scrape scrape(String replica, Instant at, String resource) {
    return Scrape.of(replica, at, text(resource));
  }

  static String text(String resource) {
    try (InputStream in = StageObserverTest.class.getResourceAsStream("/scrapes/" + resource)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Nested
  class Prefill {
    final StageObservation o = StageObserver.observe(Stage.PREFILL,
        Map.of("p0", scrape("p0", T0, "prefill-t0.txt")), Map.of("p0", scrape("p0", T1, "prefill-t1.txt")));

    @Test
    void ratesAndMeansComeFromCounterDeltas() {
      assertThat(o.seconds()).isEqualTo(10.0);
      assertThat(o.requestsPerSecond()).isCloseTo(5.0, within(1e-9));
      assertThat(o.promptTokensPerSecond()).isCloseTo(2000.0, within(1e-9));
      assertThat(o.meanPromptTokens()).isCloseTo(400.0, within(1e-9));
      assertThat(o.meanOutputTokens()).isCloseTo(1.0, within(1e-9));
    }

    @Test
    void ttftPercentilesInterpolateInsideTheIntervalsBuckets() {
      // rank 25 of 30 in (0.1, 0.25]; rank 45 ends (0.5, 0.75]; rank 49.5 is 4.5 of 5 in (2.5, 5]
      assertThat(o.ttft().count()).isEqualTo(50);
      assertThat(o.ttft().p50()).isCloseTo(0.1 + 0.15 * 25 / 30, within(1e-9));
      assertThat(o.ttft().p90()).isCloseTo(0.75, within(1e-9));
      assertThat(o.ttft().p99()).isCloseTo(2.5 + 2.5 * 4.5 / 5, within(1e-9));
      assertThat(o.itl()).isEqualTo(Percentiles.NONE);
    }

    @Test
    void gaugesAreReadAtTheIntervalsEnd() {
      assertThat(o.queuedPromptTokens()).isEqualTo(6000);
      assertThat(o.runningRequests()).isEqualTo(2);
      assertThat(o.kvUsage()).isEqualTo(0.25);
      assertThat(o.replicas()).isEqualTo(1);
    }
  }

  @Nested
  class Decode {
    final StageObservation o = StageObserver.observe(Stage.DECODE,
        Map.of("d0", scrape("d0", T0, "decode-t0.txt")), Map.of("d0", scrape("d0", T1, "decode-t1.txt")));

    @Test
    void requestsAreFinishedOnesOverEveryFinishReason() {
      assertThat(o.requestsPerSecond()).isCloseTo(4.0, within(1e-9));
      assertThat(o.meanOutputTokens()).isCloseTo(100.0, within(1e-9));
      assertThat(o.generationTokensPerSecond()).isCloseTo(400.0, within(1e-9));
    }

    @Test
    void itlPercentiles() {
      assertThat(o.itl().count()).isEqualTo(4000);
      assertThat(o.itl().p50()).isCloseTo(0.025 + 0.025 * 2000 / 3000, within(1e-9));
      assertThat(o.itl().p90()).isCloseTo(0.075 + 0.025 * 600 / 900, within(1e-9));
      assertThat(o.itl().p99()).isCloseTo(0.2 + 0.1 * 60 / 100, within(1e-9));
      assertThat(o.ttft()).isEqualTo(Percentiles.NONE);
    }

    @Test
    void gauges() {
      assertThat(o.runningRequests()).isEqualTo(24);
      assertThat(o.waitingRequests()).isEqualTo(3);
      assertThat(o.kvUsage()).isEqualTo(0.62);
    }
  }

  @Nested
  class Replicas {
    @Test
    void ratesAndBucketsAddUpOverReplicasAndGaugesAverageKv() {
      var o = StageObserver.observe(Stage.DECODE,
          Map.of("a", scrape("a", T0, "decode-t0.txt"), "b", scrape("b", T0, "decode-t0.txt")),
          Map.of("a", scrape("a", T1, "decode-t1.txt"), "b", scrape("b", T1, "decode-t1.txt")));
      assertThat(o.requestsPerSecond()).isCloseTo(8.0, within(1e-9));
      assertThat(o.meanOutputTokens()).isCloseTo(100.0, within(1e-9));
      assertThat(o.itl().count()).isEqualTo(8000);
      assertThat(o.itl().p90()).isCloseTo(0.075 + 0.025 * 600 / 900, within(1e-9));
      assertThat(o.runningRequests()).isEqualTo(48);
      assertThat(o.kvUsage()).isEqualTo(0.62);
    }

    @Test
    void aNewReplicaAddsGaugesButNoRates() {
      var o = StageObserver.observe(Stage.DECODE, Map.of("a", scrape("a", T0, "decode-t0.txt")),
          Map.of("a", scrape("a", T1, "decode-t1.txt"), "new", scrape("new", T1, "decode-t0.txt")));
      assertThat(o.replicas()).isEqualTo(2);
      assertThat(o.requestsPerSecond()).isCloseTo(4.0, within(1e-9));
      assertThat(o.runningRequests()).isEqualTo(34);
      assertThat(o.kvUsage()).isCloseTo((0.62 + 0.30) / 2, within(1e-9));
    }

    @Test
    void aRestartedReplicaCountsItsCurrentValuesAsTheInterval() {
      // t1 text before t0 text: every counter went down, as after a restart
      var o = StageObserver.observe(Stage.PREFILL, Map.of("p", scrape("p", T0, "prefill-t1.txt")),
          Map.of("p", scrape("p", T1, "prefill-t0.txt")));
      assertThat(o.requestsPerSecond()).isCloseTo(4.0, within(1e-9));
      assertThat(o.meanPromptTokens()).isCloseTo(500.0, within(1e-9));
      assertThat(o.ttft().count()).isEqualTo(40);
      assertThat(o.ttft().p99()).isCloseTo(0.1 + 0.15 * 39.6 / 40, within(1e-9));
    }

    @Test
    void noReplicaIsAnEmptyObservation() {
      var o = StageObserver.observe(Stage.PREFILL, Map.of(), Map.of());
      assertThat(o.replicas()).isZero();
      assertThat(o.seconds()).isZero();
    }
  }
}
