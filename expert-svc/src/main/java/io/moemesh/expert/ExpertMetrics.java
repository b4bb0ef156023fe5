package io.moemesh.expert;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * {@code moemesh_expert_*} on /q/metrics: frames, dispatch bytes (by part: hidden states, their scales, the
 * routing — so a BF16 dispatch's size, {@code 2·hidden + routing}, can be set against it), rows, compute
 * latency, failures, the prepared placement version (the balancer's own figures: {@link BalancerLoop}).
 */
@ApplicationScoped
public class ExpertMetrics {
  @Inject MeterRegistry registry;

  void frame(String kind, long bytes, int rows, long nanos) {
    registry.counter("moemesh_expert_frames_total", "kind", kind).increment();
    registry.counter("moemesh_expert_dispatch_bytes_total", "kind", kind).increment(bytes);
    registry.counter("moemesh_expert_rows_total", "kind", kind).increment(rows);
    Timer.builder("moemesh_expert_compute_seconds").tag("kind", kind).publishPercentileHistogram()
        .register(registry).record(nanos, TimeUnit.NANOSECONDS);
  }

  /** The parts of a dispatch frame's tensor payload, in bytes. */
  void dispatchParts(String kind, long hidden, long scales, long routing) {
    registry.counter("moemesh_expert_dispatch_part_bytes_total", "kind", kind, "part", "hidden").increment(hidden);
    registry.counter("moemesh_expert_dispatch_part_bytes_total", "kind", kind, "part", "scales").increment(scales);
    registry.counter("moemesh_expert_dispatch_part_bytes_total", "kind", kind, "part", "routing").increment(routing);
  }

  /** {@code moemesh_kernels_info{path}} = 1: the kernels' instruction-set path, as the engines export it. */
  void kernels(String path) {
    Gauge.builder("moemesh_kernels_info", () -> 1).description("The kernels' instruction-set path (label path), 1")
        .tag("path", path).register(registry);
  }

  /** {@code moemesh_expert_prepared_version}: the newest placement whose experts this routed shard holds. */
  void preparedVersion(Supplier<Number> version) {
    Gauge.builder("moemesh_expert_prepared_version", version).description("Newest placement version whose experts this shard holds")
        .register(registry);
  }

  void failed(String kind) {
    registry.counter("moemesh_expert_frame_failures_total", "kind", kind).increment();
  }
}
