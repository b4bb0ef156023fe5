package io.moemesh.planner.observe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.metrics.MetricsFormatException;
import java.time.Instant;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class ScrapeTest {
  @Test
  void aBucketBoundThatIsNotANumberIsRefusedWithTheScrape() {
    assertThatThrownBy(() -> Scrape.of("r", Instant.EPOCH, "h_seconds_bucket{le=\"soon\"} 1"))
        .isInstanceOf(MetricsFormatException.class).hasMessage("h_seconds_bucket: bucket bound le=\"soon\" is not a number");
  }

  @Test
  void quantileOfTheInfBucketIsTheHighestFiniteBound() {
    var buckets = new TreeMap<Double, Double>(Map.of(0.1, 0.0, 1.0, 1.0, Double.POSITIVE_INFINITY, 10.0));
    assertThat(Percentiles.of(buckets).p90()).isEqualTo(1.0);
    assertThat(Percentiles.of(buckets).p50()).isEqualTo(1.0);
  }
}
