package io.moemesh.expert;

import static io.moemesh.telemetry.ExpertStepAttributes.*;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.quarkus.runtime.ShutdownEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * One span per engine step per stream, in the step's trace: SERVER kind, named {@value #DISPATCH} (routed) or
 * {@value #SHARED}, a child of the engine's span of that step's traffic with this service (every frame of it carries
 * that span's W3C {@code traceparent}; a stream lives for many steps of many requests, so the stream's own gRPC span
 * would say nothing about one of them). The protocol's unit is a frame (one MoE layer of one step); a step is the run of
 * consecutive frames on a stream with the same {@code traceparent}: an engine sends its steps one after the other. The
 * span starts when the step's first frame arrives and ends at its last frame's answer; it is closed when the next
 * step's first frame arrives, when the stream ends, or {@link #IDLE} after its last answer (the engine went idle) — so
 * a step whose frames come more than that apart shows as two spans. Attributes ({@code ExpertStepAttributes}): layers
 * covered, frames, tokens dispatched, output rows, bytes in and out, compute and queue seconds; ERROR with the first
 * failed frame's reason and an event per failed frame. While a traced frame computes, its step's span is current on
 * the compute thread ({@link #current}), so its log lines carry the trace. Untraced or unsampled steps, and malformed
 * {@code traceparent}s, get no span: the invalid span, whose calls cost nothing.
 */
@ApplicationScoped
class StepSpans {
  static final String DISPATCH = "moemesh.expert.dispatch";
  static final String SHARED = "moemesh.expert.shared";
  static final String FRAME_FAILED = "moemesh.expert.frame_failed";
  /** Past this since a step's last answer with no frame after it, the engine is idle: the step's span ends. */
  static final Duration IDLE = Duration.ofSeconds(2);

  private static final TextMapGetter<String> TRACEPARENT = new TextMapGetter<>() {
    @Override
    public Iterable<String> keys(String carrier) {
      return List.of("traceparent");
    }

    @Override
    public String get(String carrier, String key) {
      return "traceparent".equals(key) ? carrier : null;
    }
  };
  private static final Instant EPOCH_ANCHOR = Instant.now();
  private static final long NANO_ANCHOR = System.nanoTime();

  @Inject Tracer tracer;
  private final ScheduledExecutorService idleChecks = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name("expert-step-spans").factory());

  void stop(@Observes ShutdownEvent event) {
    idleChecks.shutdownNow();
  }

  /** The step spans of one stream named {@code name}; {@code shard} < 0: not a routed shard. Used on {@code compute} only. */
  Stream stream(String name, int shard, Executor compute) {
    return new Stream(name, shard, compute);
  }

  /**
   * Makes {@code span} current on this thread until the scope closes, so that what is logged meanwhile carries its trace
   * and span ids (the MDC's {@code traceId}, {@code spanId}, as in the other services' logs); for an untraced frame's
   * invalid span, nothing: no context is attached and the MDC is not touched.
   */
  static Scope current(Span span) {
    return span.getSpanContext().isValid() ? span.makeCurrent() : Scope.noop();
  }

  /** What one frame was and cost; {@code error} null when it was answered with outputs. */
  record Frame(int layerId, long placementVersion, long tokens, long rows, long dispatchBytes, long combineBytes, long arrivedNanos,
      long computeStartNanos, long answeredNanos, String error) {}

  /** One stream's open step, if any; every method but {@link #close} runs on the compute thread. */
  final class Stream {
    private final String name;
    private final int shard;
    private final Executor compute;
    private Step open; // the step whose frames came last, while its span is open

    private Stream(String name, int shard, Executor compute) {
      this.name = name;
      this.shard = shard;
      this.compute = compute;
    }

    /** The span of the step a frame with {@code traceparent} belongs to, started at its arrival if it is the step's first. */
    Span begin(String traceparent, long arrivedNanos) {
      if (open != null && open.traceparent.equals(traceparent)) return open.span;
      end();
      Span span = start(traceparent, arrivedNanos);
      if (span.getSpanContext().isValid()) {
        open = new Step(traceparent, span);
        scheduleIdleCheck(open, IDLE.toNanos());
      }
      return span;
    }

    /** Counts {@code frame} into the open step (of the last {@link #begin}). */
    void done(Frame frame) {
      if (open != null) open.add(frame);
    }

    /** The stream ended: ends its open step's span (from any thread). */
    void close() {
      try {
        compute.execute(this::end);
      } catch (RejectedExecutionException e) { // the service stops
      }
    }

    private Span start(String traceparent, long arrivedNanos) {
      if (traceparent.isEmpty()) return Span.getInvalid();
      Context parent = W3CTraceContextPropagator.getInstance().extract(Context.root(), traceparent, TRACEPARENT);
      if (!Span.fromContext(parent).getSpanContext().isValid()) return Span.getInvalid();
      var b = tracer.spanBuilder(name).setParent(parent).setSpanKind(SpanKind.SERVER).setStartTimestamp(epoch(arrivedNanos), TimeUnit.NANOSECONDS)
          .setAttribute(RPC_SYSTEM, "grpc").setAttribute(RPC_SERVICE, SERVICE).setAttribute(RPC_METHOD, name.equals(DISPATCH) ? "Dispatch" : "Shared");
      if (shard >= 0) b.setAttribute(SHARD, (long) shard);
      return b.startSpan();
    }

    private void end() {
      if (open == null) return;
      open.end();
      open = null;
    }

    private void scheduleIdleCheck(Step step, long delayNanos) {
      try {
        idleChecks.schedule(() -> compute.execute(() -> {
          if (open != step) return; // ended already
          long idle = System.nanoTime() - step.lastAnsweredNanos;
          if (idle >= IDLE.toNanos()) end();
          else scheduleIdleCheck(step, IDLE.toNanos() - idle);
        }), delayNanos, TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) { // the service stops
      }
    }
  }

  /** One engine step's frames on one stream, counted until its span ends. */
  private static final class Step {
    final String traceparent;
    final Span span;
    final BitSet layers = new BitSet();
    long frames, tokens, rows, dispatchBytes, combineBytes, computeNanos, queueNanos, failed, placementVersion = -1;
    long lastAnsweredNanos = System.nanoTime();
    String firstFailure;

    Step(String traceparent, Span span) {
      this.traceparent = traceparent;
      this.span = span;
    }

    void add(Frame f) {
      frames++;
      layers.set(f.layerId());
      tokens += f.tokens();
      rows += f.rows();
      dispatchBytes += f.dispatchBytes();
      combineBytes += f.combineBytes();
      queueNanos += f.computeStartNanos() - f.arrivedNanos();
      computeNanos += f.answeredNanos() - f.computeStartNanos();
      if (f.placementVersion() >= 0) placementVersion = f.placementVersion();
      lastAnsweredNanos = f.answeredNanos();
      if (f.error() != null) {
        failed++;
        if (firstFailure == null) firstFailure = f.error();
        span.addEvent(FRAME_FAILED, Attributes.builder().put("moemesh.expert.layer_id", f.layerId())
            .put("exception.message", f.error()).build(), epoch(f.answeredNanos()), TimeUnit.NANOSECONDS);
      }
    }

    void end() {
      span.setAttribute(FRAMES, frames).setAttribute(LAYERS, (long) layers.cardinality())
          .setAttribute(LAYER_IDS, layers.stream().mapToObj(l -> (long) l).toList()).setAttribute(TOKENS, tokens).setAttribute(ROWS, rows)
          .setAttribute(DISPATCH_SIZE, dispatchBytes).setAttribute(COMBINE_SIZE, combineBytes)
          .setAttribute(COMPUTE_DURATION, computeNanos / 1e9).setAttribute(QUEUE_DURATION, queueNanos / 1e9);
      if (placementVersion >= 0) span.setAttribute(PLACEMENT_VERSION, placementVersion);
      if (failed > 0) span.setAttribute(FAILED_FRAMES, failed).setStatus(StatusCode.ERROR, firstFailure);
      span.end(epoch(lastAnsweredNanos), TimeUnit.NANOSECONDS);
    }
  }

  /** {@code System.nanoTime()} as nanoseconds since the epoch. */
  private static long epoch(long nanoTime) {
    return EPOCH_ANCHOR.getEpochSecond() * 1_000_000_000L + EPOCH_ANCHOR.getNano() + (nanoTime - NANO_ANCHOR);
  }
}
