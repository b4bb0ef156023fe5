package io.moemesh.telemetry;

import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.quarkus.arc.Unremovable;
import io.quarkus.arc.lookup.LookupIfProperty;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;

/**
 * OTLP trace export, off unless configured (docs/architecture.md, "Observability"): spans are made and their W3C context
 * travels on every call either way, but they leave the process only when {@code moemesh.otlp.endpoint} (env
 * {@code MOEMESH_OTLP_ENDPOINT}, e.g. {@code http://collector:4318}) names a collector.
 *
 * <p>How: Quarkus builds its OTLP exporter unless some {@link SpanExporter} bean can be looked up; this one can while
 * the endpoint is unset, and drops what it is given. ({@code quarkus.otel.traces.exporter=none} cannot be switched
 * by a runtime setting: it is fixed at build time.) Every service gets it from this module.
 */
@Singleton
public class TraceExport {
  @Produces
  @Singleton
  @Unremovable
  @LookupIfProperty(name = "moemesh.otlp.endpoint", stringValue = "", lookupIfMissing = true)
  SpanExporter noExport() {
    return SpanExporter.composite(); // the no-op exporter
  }
}
