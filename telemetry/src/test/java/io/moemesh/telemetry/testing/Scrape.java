package io.moemesh.telemetry.testing;

import io.moemesh.metrics.MetricsFormatException;
import io.moemesh.metrics.PrometheusText;
import io.moemesh.metrics.Sample;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.OptionalDouble;
import java.util.Set;

/**
 * One scrape of a service's {@code /q/metrics}, for every module's tests (shipped in telemetry's test jar): the
 * page parsed into samples by {@link PrometheusText} (Prometheus text or OpenMetrics: the value is always the token
 * after the series, never an exemplar's number), and the samples a test names.
 *
 * <p>A test names samples with a <em>series</em>: {@code name} or {@code name{label="value",…}}, meaning every sample
 * of that name that carries at least those labels, in any order.
 */
public final class Scrape {
  /** One client for every scrape, HTTP/1.1 and a deadline: a client per call (each with its own selector thread, and an h2c upgrade attempt) once hung a run. */
  private static final HttpClient CLIENT = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();

  private final String text;
  private final List<Sample> samples = new ArrayList<>();
  private final Set<String> names = new LinkedHashSet<>();

  private Scrape(String text) {
    this.text = text;
    for (String line : text.lines().toList()) {
      if (line.startsWith("# TYPE ")) names.add(line.split(" ")[2]);
      if (line.isBlank() || line.startsWith("#")) continue;
      Sample s = sample(line);
      samples.add(s);
      names.add(s.name());
    }
  }

  /** {@code text}, a {@code /q/metrics} page, parsed; an IllegalArgumentException quoting the first line that is not a sample. */
  public static Scrape parse(String text) {
    return new Scrape(text);
  }

  /** {@code http://localhost:httpPort/q/metrics}, scraped now (a 30 s deadline). */
  public static Scrape of(int httpPort) throws IOException, InterruptedException {
    HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + httpPort + "/q/metrics")).timeout(Duration.ofSeconds(30)).build();
    HttpResponse<String> response = CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
    if (response.statusCode() != 200) throw new IOException("/q/metrics on port " + httpPort + " answered " + response.statusCode());
    return parse(response.body());
  }

  /** The value of {@code series} on the service at {@code httpPort} now: {@code Scrape.of(httpPort).value(series)}. */
  public static double metric(int httpPort, String series) throws IOException, InterruptedException {
    return of(httpPort).value(series);
  }

  /** The page as it came. */
  public String text() {
    return text;
  }

  public List<Sample> samples() {
    return List.copyOf(samples);
  }

  /** The samples {@code series} names, in page order. */
  public List<Sample> samples(String series) {
    Sample selector = selector(series);
    return samples.stream().filter(s -> s.isOf(selector)).toList();
  }

  /** The first sample {@code series} names, if any. */
  public OptionalDouble find(String series) {
    return samples(series).stream().mapToDouble(Sample::value).findFirst();
  }

  /** The first sample {@code series} names; 0 when there is none (a counter never incremented is not exported yet). */
  public double value(String series) {
    return find(series).orElse(0);
  }

  /** The sum of every sample {@code series} names (e.g. a counter over all its labels); 0 when there is none. */
  public double sum(String series) {
    return samples(series).stream().mapToDouble(Sample::value).sum();
  }

  /** How much {@code series}' {@link #value} grew since {@code before}. */
  public double delta(Scrape before, String series) {
    return value(series) - before.value(series);
  }

  /** Every sample name and every metric family ({@code # TYPE}) the page exports. */
  public Set<String> names() {
    return Set.copyOf(names);
  }

  /** One sample line parsed; an IllegalArgumentException quoting the line if it is not one. */
  public static Sample sample(String line) {
    try {
      return PrometheusText.sample(line);
    } catch (MetricsFormatException e) {
      throw new IllegalArgumentException("not a metrics sample line: " + line, e);
    }
  }

  /** {@code name} or {@code name{label="value",…}} as a sample to match (value unused). */
  private static Sample selector(String series) {
    try {
      return PrometheusText.series(series);
    } catch (MetricsFormatException e) {
      throw new IllegalArgumentException("not a series: " + series + " (write name or name{label=\"value\",…})", e);
    }
  }
}
