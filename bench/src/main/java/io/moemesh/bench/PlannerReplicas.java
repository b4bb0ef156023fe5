package io.moemesh.bench;

import io.moemesh.metrics.PrometheusText;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Replica counts over a run, scraped once a second from a planner's Prometheus text ({@code --planner-metrics}):
 * every series of {@code moemesh_planner_replicas{stage="…",kind="desired|actual"}}. A failed scrape is counted and
 * skipped, so a planner that restarts leaves a gap, not a failed benchmark.
 */
final class PlannerReplicas implements AutoCloseable {
  static final String METRIC = "moemesh_planner_replicas";
  static final Duration EVERY = Duration.ofSeconds(1);

  /** One series' value at {@code seconds} from the run's start. */
  record Sample(double seconds, String stage, String kind, double replicas) {}

  /** One series' labels and value in a body. */
  record Series(String stage, String kind, double replicas) {}

  private final URI url;
  private final long startNanos;
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(EVERY).build();
  private final List<Sample> samples = new ArrayList<>();
  private final AtomicInteger failures = new AtomicInteger();
  private volatile String lastFailure;
  private final Thread scraper;

  /** Starts scraping {@code url} (a URL without a path means its {@code /q/metrics}) now, times relative to {@code startNanos}. */
  PlannerReplicas(URI url, long startNanos) {
    this.url = url.getPath() == null || url.getPath().isEmpty() || url.getPath().equals("/") ? url.resolve("/q/metrics") : url;
    this.startNanos = startNanos;
    this.scraper = Thread.ofVirtual().name("planner-metrics").start(this::scrapeEverySecond);
  }

  private void scrapeEverySecond() {
    long next = System.nanoTime();
    while (!Thread.currentThread().isInterrupted()) {
      scrapeOnce();
      next += EVERY.toNanos();
      long wait = next - System.nanoTime();
      if (wait > 0) {
        try {
          Thread.sleep(Duration.ofNanos(wait));
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }

  private void scrapeOnce() {
    try {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(url).timeout(EVERY).build(), HttpResponse.BodyHandlers.ofString());
      double at = ServeClient.seconds(startNanos, System.nanoTime());
      if (r.statusCode() != 200) throw new IOException(url + " answered HTTP " + r.statusCode());
      List<Series> series = parse(r.body());
      synchronized (samples) {
        for (Series s : series) samples.add(new Sample(at, s.stage(), s.kind(), s.replicas()));
      }
    } catch (IOException | RuntimeException e) {
      failures.incrementAndGet();
      lastFailure = e.toString();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Stops scraping (waiting for a scrape under way). */
  @Override
  public void close() throws InterruptedException {
    scraper.interrupt();
    scraper.join();
    http.close();
  }

  List<Sample> samples() {
    synchronized (samples) {
      return List.copyOf(samples);
    }
  }

  int failures() {
    return failures.get();
  }

  String lastFailure() {
    return lastFailure;
  }

  /** The {@link #METRIC} series of a {@code /q/metrics} page; series without a {@code stage} label are skipped. */
  static List<Series> parse(String body) {
    List<Series> series = new ArrayList<>();
    for (io.moemesh.metrics.Sample s : PrometheusText.parse(body)) {
      String stage = s.labels().get("stage");
      if (s.name().equals(METRIC) && stage != null) series.add(new Series(stage, s.labels().getOrDefault("kind", ""), s.value()));
    }
    return series;
  }
}
