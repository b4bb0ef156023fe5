package io.moemesh.bench;

import io.moemesh.metrics.PrometheusText;
import io.moemesh.metrics.Sample;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;

/**
 * Speculative decoding's counters of a set of engine replicas, summed from their {@code /q/metrics}
 * ({@code vllm:spec_decode_num_drafts_total}, {@code _num_draft_tokens_total}, {@code _num_accepted_tokens_total}):
 * {@code bench serve --spec-metrics} scrapes the decode replicas right before and after the measured requests, as the
 * gateway it sends them to does not export these.
 */
record SpecDecodeCounts(double drafts, double draftTokens, double acceptedTokens) {
  static final String DRAFTS = "vllm:spec_decode_num_drafts_total";
  static final String DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total";
  static final String ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total";

  /** The sums over every replica; a URL without a path means its {@code /q/metrics}. */
  static SpecDecodeCounts scrape(List<URI> replicas, Duration timeout) throws IOException, InterruptedException {
    var http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(timeout).build();
    SpecDecodeCounts sum = new SpecDecodeCounts(0, 0, 0);
    for (URI replica : replicas) {
      URI url = replica.getPath() == null || replica.getPath().isEmpty() || replica.getPath().equals("/") ? replica.resolve("/q/metrics") : replica;
      HttpResponse<String> response = http.send(HttpRequest.newBuilder(url).timeout(timeout).build(), HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200) throw new IOException(url + " answered HTTP " + response.statusCode());
      sum = sum.plus(parse(response.body()));
    }
    return sum;
  }

  /** The counters in one {@code /q/metrics} page (each summed over its series; 0 when absent). */
  static SpecDecodeCounts parse(String metrics) {
    double[] v = new double[3];
    for (Sample s : PrometheusText.parse(metrics)) {
      int i = List.of(DRAFTS, DRAFT_TOKENS, ACCEPTED).indexOf(s.name());
      if (i >= 0) v[i] += s.value();
    }
    return new SpecDecodeCounts(v[0], v[1], v[2]);
  }

  SpecDecodeCounts plus(SpecDecodeCounts o) {
    return new SpecDecodeCounts(drafts + o.drafts, draftTokens + o.draftTokens, acceptedTokens + o.acceptedTokens);
  }

  SpecDecodeCounts minus(SpecDecodeCounts o) {
    return new SpecDecodeCounts(drafts - o.drafts, draftTokens - o.draftTokens, acceptedTokens - o.acceptedTokens);
  }

  /** Accepted over verified draft tokens; NaN before any. */
  double acceptanceRate() {
    return draftTokens == 0 ? Double.NaN : acceptedTokens / draftTokens;
  }

  /** Tokens a request gains per verification step: 1 + mean accepted drafts (vLLM's mean acceptance length); NaN before any. */
  double meanAcceptanceLength() {
    return drafts == 0 ? Double.NaN : 1 + acceptedTokens / drafts;
  }
}
