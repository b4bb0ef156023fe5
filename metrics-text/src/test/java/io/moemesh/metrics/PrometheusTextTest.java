package io.moemesh.metrics;

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
  void skipsOpenMetricsExemplarsAndTheEofMarker() {
    var samples = PrometheusText.parse("""
        # TYPE http_server_requests_seconds histogram
        http_server_requests_seconds_bucket{le="0.1",uri="/v1/chat/completions"} 3.0 # {span_id="ab",trace_id="cd"} 0.08 1700000000.1
        http_server_requests_seconds_count{uri="/v1/chat/completions"} 4 1700000000
        # EOF
        """);
    assertThat(samples).containsExactly(
        new Sample("http_server_requests_seconds_bucket", Map.of("le", "0.1", "uri", "/v1/chat/completions"), 3.0),
        new Sample("http_server_requests_seconds_count", Map.of("uri", "/v1/chat/completions"), 4.0));
  }

  @Test
  void aSeriesSelectsTheSamplesCarryingItsLabels() {
    Sample selector = PrometheusText.series("vllm:request_success_total{finished_reason=\"stop\"}");
    assertThat(selector.value()).isNaN();
    assertThat(PrometheusText.sample("vllm:request_success_total{model_name=\"demo\",finished_reason=\"stop\"} 7").isOf(selector)).isTrue();
    assertThat(PrometheusText.sample("vllm:request_success_total{finished_reason=\"length\"} 7").isOf(selector)).isFalse();
    assertThat(PrometheusText.sample("vllm:request_success_total 7").isOf(PrometheusText.series("vllm:request_success_total"))).isTrue();
    assertThatThrownBy(() -> PrometheusText.series("x{a=\"1\"} 2")).hasMessageContaining("unexpected text after the series");
  }
}
