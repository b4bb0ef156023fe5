package io.moemesh.telemetry.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.metrics.Sample;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ScrapeTest {
  static final String PAGE = """
      # HELP vllm:request_success_total Finished requests
      # TYPE vllm:request_success_total counter
      vllm:request_success_total{finished_reason="length",model_name="tiny"} 3.0
      vllm:request_success_total{finished_reason="stop",model_name="tiny"} 2.0 # {trace_id="0af7651916cd43dd8448eb211c80319c"} 1.0 1733500000.000
      # TYPE vllm:num_requests_running gauge
      vllm:num_requests_running 4
      moemesh_gateway_requests_total{endpoint="completion",status="499"} 6.0 1733500000123
      moemesh_odd{path="a b}c",quote="say \\"hi\\"",nl="x\\ny"} +Inf
      moemesh_never NaN
      # EOF
      """;

  @Test
  void aSeriesNamesEverySampleWithAtLeastItsLabels() {
    Scrape s = Scrape.parse(PAGE);
    assertThat(s.sum("vllm:request_success_total")).isEqualTo(5);
    assertThat(s.value("vllm:request_success_total")).as("the first sample").isEqualTo(3);
    assertThat(s.value("vllm:request_success_total{finished_reason=\"stop\"}")).as("not the exemplar's value").isEqualTo(2);
    assertThat(s.value("vllm:request_success_total{model_name=\"tiny\",finished_reason=\"stop\"}")).as("labels in any order").isEqualTo(2);
    assertThat(s.value("moemesh_gateway_requests_total{endpoint=\"completion\",status=\"499\"}")).as("not the timestamp").isEqualTo(6);
    assertThat(s.value("vllm:num_requests_running")).isEqualTo(4);
  }

  @Test
  void anAbsentSampleIsZeroOrEmpty() {
    Scrape s = Scrape.parse(PAGE);
    assertThat(s.value("vllm:request_success_total{finished_reason=\"abort\"}")).isZero();
    assertThat(s.sum("moemesh_missing_total")).isZero();
    assertThat(s.find("moemesh_missing_total")).isEmpty();
    assertThat(s.find("vllm:num_requests_running")).hasValue(4);
    assertThat(s.value("vllm:request_success")).as("a name is whole, not a prefix").isZero();
  }

  @Test
  void labelValuesKeepSpacesBracesAndEscapes() {
    Sample odd = Scrape.parse(PAGE).samples("moemesh_odd").getFirst();
    assertThat(odd.labels()).isEqualTo(Map.of("path", "a b}c", "quote", "say \"hi\"", "nl", "x\ny"));
    assertThat(odd.value()).isInfinite();
    assertThat(Scrape.parse(PAGE).value("moemesh_never")).isNaN();
  }

  @Test
  void namesAreTheSeriesAndFamiliesExported() {
    assertThat(Scrape.parse(PAGE).names()).containsExactlyInAnyOrder("vllm:request_success_total", "vllm:num_requests_running",
        "moemesh_gateway_requests_total", "moemesh_odd", "moemesh_never");
  }

  @Test
  void deltaIsTheGrowthSinceAnEarlierScrape() {
    Scrape before = Scrape.parse("moemesh_kvstore_expired_total 1.0\n"), after = Scrape.parse("moemesh_kvstore_expired_total 3.0\n");
    assertThat(after.delta(before, "moemesh_kvstore_expired_total")).isEqualTo(2);
  }

  @Test
  void badLinesAndSeriesAreNamed() {
    assertThatThrownBy(() -> Scrape.parse("vllm:x{a=\"1\"\n")).hasMessage("not a metrics sample line: vllm:x{a=\"1\"");
    assertThatThrownBy(() -> Scrape.parse("vllm:x one\n")).hasMessage("not a metrics sample line: vllm:x one");
    assertThatThrownBy(() -> Scrape.parse(PAGE).value("vllm:x{a=\"1\"} 2")).hasMessageStartingWith("not a series: vllm:x{a=\"1\"} 2");
  }
}
