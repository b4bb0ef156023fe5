package io.moemesh.enginehost.testing;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** For the engine services' tests (shipped in engine-host's test jar): samples of the service's {@code /q/metrics}. */
public final class Scrape {
  private Scrape() {}

  /**
   * The value of one sample, e.g. {@code moemesh_kv_transfer_bytes_total{direction="sent"}} (the tags given must
   * lead, in Prometheus' alphabetical order); 0 if the service has no such sample yet. The scrape is OpenMetrics, as
   * Prometheus asks for it, so a sample may carry an exemplar ({@code # {trace_id=...} ...}) after its value.
   */
  public static double metric(int httpPort, String sample) throws IOException, InterruptedException {
    String body = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://localhost:" + httpPort + "/q/metrics"))
        .build(), HttpResponse.BodyHandlers.ofString()).body();
    String name = sample.contains("{") ? sample.substring(0, sample.indexOf('{')) : sample;
    String tags = sample.contains("{") ? Pattern.quote(sample.substring(sample.indexOf('{') + 1, sample.length() - 1)) + "[^}]*" : "[^}]*";
    Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "(?:\\{" + tags + "\\})? ([0-9.eE+-]+)(?: # .*)?$").matcher(body);
    return m.find() ? Double.parseDouble(m.group(1)) : 0;
  }

  /** The value of one exposition line, {@code name{labels} value [timestamp] [# exemplar]}: never the exemplar's numbers. */
  public static double sampleValue(String line) {
    int space = line.indexOf(' '), brace = line.indexOf('{');
    int seriesEnd = brace >= 0 && brace < space ? line.indexOf('}', brace) + 1 : space;
    String rest = line.substring(seriesEnd).stripLeading();
    int end = rest.indexOf(' ');
    return Double.parseDouble(end < 0 ? rest : rest.substring(0, end));
  }
}
