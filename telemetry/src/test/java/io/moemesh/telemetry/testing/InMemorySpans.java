package io.moemesh.telemetry.testing;

import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;
import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;

/**
 * For every service's tests (shipped in telemetry's test jar): the spans the service finished, through a
 * CDI-produced {@link InMemorySpanExporter} ({@code quarkus.otel.traces.exporter=cdi}, the default). Inject the
 * exporter; {@link #awaitSpan} waits for the batch processor to hand spans over.
 */
@ApplicationScoped
public class InMemorySpans {
  @Produces
  @Singleton
  InMemorySpanExporter exporter() {
    return InMemorySpanExporter.create();
  }

  /** The one finished span matching {@code which}, once exported (the batch processor delays it a little). */
  public static SpanData awaitSpan(InMemorySpanExporter exporter, Predicate<SpanData> which) {
    return awaitSpans(exporter, which, 1).getFirst();
  }

  /** At least {@code n} finished spans matching {@code which}, once exported. */
  public static List<SpanData> awaitSpans(InMemorySpanExporter exporter, Predicate<SpanData> which, int n) {
    return org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(
        () -> exporter.getFinishedSpanItems().stream().filter(which).toList(), spans -> spans.size() >= n);
  }

  /** Matches spans by name and an attribute's value. */
  public static Predicate<SpanData> named(String name, io.opentelemetry.api.common.AttributeKey<String> key, String value) {
    return s -> s.getName().equals(name) && value.equals(s.getAttributes().get(key));
  }
}
