package io.moemesh.planner.observe;

import io.moemesh.metrics.MetricsFormatException;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

/**
 * Reads one replica's {@code /q/metrics} over HTTP. The body is bounded (a replica's metrics are tens of kB) and parsed
 * as untrusted text; any failure is an {@link IOException} naming the replica, and the round goes on without it.
 */
public final class MetricsScraper {
  static final int MAX_BODY_BYTES = 4 << 20;
  private final HttpClient http;
  private final Duration timeout;
  private final Clock clock;

  public MetricsScraper(Duration timeout, Clock clock) {
    this.http = HttpClient.newBuilder().connectTimeout(timeout).build();
    this.timeout = timeout;
    this.clock = clock;
  }

  public Scrape scrape(URI url) throws IOException {
    HttpRequest request = HttpRequest.newBuilder(url).timeout(timeout).header("Accept", "text/plain;version=0.0.4").GET().build();
    HttpResponse<InputStream> response;
    try {
      response = http.send(request, HttpResponse.BodyHandlers.ofInputStream());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(url + ": interrupted", e);
    }
    Instant at = clock.instant();
    byte[] body;
    try (InputStream in = response.body()) {
      if (response.statusCode() != 200) throw new IOException(url + ": HTTP " + response.statusCode());
      body = in.readNBytes(MAX_BODY_BYTES + 1);
    }
    if (body.length > MAX_BODY_BYTES) throw new IOException(url + ": body over " + MAX_BODY_BYTES + " bytes");
    try {
      return Scrape.of(url.toString(), at, new String(body, StandardCharsets.UTF_8));
    } catch (MetricsFormatException e) {
      throw new IOException(url + ": " + e.getMessage(), e);
    }
  }
}
