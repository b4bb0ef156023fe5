package io.moemesh.planner.observe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class PrometheusTextTest {
  @Test
  void readsNamesWithColonsLabelsEscapesAndTimestamps() {
    var samples = PrometheusText.parse("""
        # HELP vllm:num_requests_running x
        # TYPE vllm:num_requests_running gauge
        vllm:num_requests_running{model_name="demo",} 2.0
        up 1 1700000000000
        weird{a="q\\"uote",b="back\\\\slash\\nline"} +Inf
        gone{model_name="m"} NaN
        """);
    assertThat(samples).containsExactly(
        new Sample("vllm:num_requests_running", Map.of("model_name", "demo"), 2.0),
        new Sample("up", Map.of(), 1.0),
        new Sample("weird", Map.of("a", "q\"uote", "b", "back\\slash\nline"), Double.POSITIVE_INFINITY),
        new Sample("gone", Map.of("model_name", "m"), Double.NaN));
  }

  @Test
  void refusesMalformedLinesWithTheirNumber() {
    assertThatThrownBy(() -> PrometheusText.parse("ok 1\nbad{a=\"x\" 1\n")).isInstanceOf(MetricsFormatException.class)
        .hasMessageStartingWith("line 2: expected , or } after label a").hasMessageContaining("bad{a=");
    assertThatThrownBy(() -> PrometheusText.parse("x{a=\"1} 2")).hasMessageContaining("unterminated label value");
    assertThatThrownBy(() -> PrometheusText.parse("x{a=1} 2")).hasMessageContaining("expected label=\"value\"");
    assertThatThrownBy(() -> PrometheusText.parse("x 1 2 3")).hasMessageContaining("expected a value");
    assertThatThrownBy(() -> PrometheusText.parse("x abc")).hasMessageContaining("value is not a number");
    assertThatThrownBy(() -> PrometheusText.parse("{a=\"b\"} 1")).hasMessageContaining("no metric name");
    assertThatThrownBy(() -> PrometheusText.parse("x{a=\"1\",a=\"2\"} 1")).hasMessageContaining("label a repeated");
  }

  @Test
  void aBucketBoundThatIsNotANumberIsRefusedWithTheScrape() {
    assertThatThrownBy(() -> Scrape.of("r", java.time.Instant.EPOCH, "h_seconds_bucket{le=\"soon\"} 1"))
        .isInstanceOf(MetricsFormatException.class).hasMessage("h_seconds_bucket: bucket bound le=\"soon\" is not a number");
  }

  @Test
  void quantileOfTheInfBucketIsTheHighestFiniteBound() {
    var buckets = new java.util.TreeMap<Double, Double>(Map.of(0.1, 0.0, 1.0, 1.0, Double.POSITIVE_INFINITY, 10.0));
    assertThat(Percentiles.of(buckets).p90()).isEqualTo(1.0);
    assertThat(Percentiles.of(buckets).p50()).isEqualTo(1.0);
  }
}
