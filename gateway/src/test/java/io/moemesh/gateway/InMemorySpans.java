package io.moemesh.gateway;

import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;
import java.time.Duration;
import java.util.function.Predicate;
import org.awaitility.Awaitility;

/** The spans the gateway (and its fake replicas) finished, through a CDI-produced exporter ({@code quarkus.otel.traces.exporter=cdi}, the default). */
@ApplicationScoped
public class InMemorySpans {
  @Produces
  @Singleton
  InMemorySpanExporter exporter() {
    return InMemorySpanExporter.create();
  }

  /** At least {@code n} finished spans matching {@code which}, once exported. */
  static java.util.List<SpanData> awaitSpans(InMemorySpanExporter exporter, Predicate<SpanData> which, int n) {
    return Awaitility.await().atMost(Duration.ofSeconds(30))
        .until(() -> exporter.getFinishedSpanItems().stream().filter(which).toList(), spans -> spans.size() >= n);
  }

  /** The first finished span matching {@code which}, once exported (the batch processor delays it a little). */
  static SpanData awaitSpan(InMemorySpanExporter exporter, Predicate<SpanData> which) {
    return Awaitility.await().atMost(Duration.ofSeconds(30))
        .until(() -> exporter.getFinishedSpanItems().stream().filter(which).findFirst(), java.util.Optional::isPresent).get();
  }
}
