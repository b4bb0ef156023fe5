package io.moemesh.enginehost.telemetry;

import static io.moemesh.telemetry.ExpertStepAttributes.*;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.ContextKey;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A traced engine step's traffic with the expert services: one CLIENT span per service the step sent frames to,
 * {@value #DISPATCH} (a routed shard, {@code moemesh.expert.shard}) or {@value #SHARED}, a child of the step's span
 * ({@link StepTracing}), from the step's first frame to that service until its last answer. Every frame of it carries
 * this span's W3C {@code traceparent}, so the service's span of the step is its child: the streams outlive steps, but a
 * step's frames on a stream are one call from this span's view (parent/child, not links). Attributes
 * ({@code ExpertStepAttributes}): layers, frames, tokens and rows sent, bytes each way, the frames' summed round trip;
 * ERROR when a frame failed or was still unanswered when the step ended. Lives in the step's {@link Context}; a step
 * without a span has none, and its frames carry no context.
 */
public final class ExpertStepSpans {
  public static final String DISPATCH = "experts dispatch";
  public static final String SHARED = "experts shared";
  private static final ContextKey<ExpertStepSpans> KEY = ContextKey.named("moemesh-expert-step-spans");
  private final Tracer tracer;
  private final List<Call> calls = new ArrayList<>(); // step thread only

  ExpertStepSpans(Tracer tracer) {
    this.tracer = tracer;
  }

  /** {@code context} with these spans: what {@link #call} finds on the step thread. */
  Context into(Context context) {
    return context.with(KEY, this);
  }

  /**
   * The current step's call to {@code service} (started now if this is its first frame there): {@link Call#NONE} when
   * the step is not traced. {@code shard} < 0 for the shared experts. On the step thread.
   */
  public static Call call(String service, int shard) {
    ExpertStepSpans spans = Context.current().get(KEY);
    if (spans == null) return Call.NONE;
    for (Call c : spans.calls) if (c.service.equals(service)) return c;
    var b = spans.tracer.spanBuilder(shard >= 0 ? DISPATCH : SHARED).setSpanKind(SpanKind.CLIENT).setAttribute(RPC_SYSTEM, "grpc")
        .setAttribute(RPC_SERVICE, SERVICE).setAttribute(RPC_METHOD, shard >= 0 ? "Dispatch" : "Shared").setAttribute(SERVER_ADDRESS, service)
        .setStartTimestamp(epoch(System.nanoTime()), TimeUnit.NANOSECONDS);
    if (shard >= 0) b.setAttribute(SHARD, (long) shard);
    Call c = new Call(service, b.startSpan());
    spans.calls.add(c);
    return c;
  }

  /** The step ended: ends every call's span. */
  void end() {
    for (Call c : calls) c.end();
  }

  /** One step's frames to one service; sent on the step thread, answered on the transport's. */
  public static class Call {
    /** An untraced step's: no span, frames carry no context. */
    public static final Call NONE = new Call("", Span.getInvalid());
    private final String service;
    private final Span span;
    private final String traceparent;
    private final BitSet layers = new BitSet();
    private long frames, answered, failed, tokens, rows, dispatchBytes, combineBytes, roundTripNanos, lastAnswerNanos;
    private String firstFailure;
    private boolean ended;

    private Call(String service, Span span) {
      this.service = service;
      this.span = span;
      SpanContext c = span.getSpanContext();
      this.traceparent = c.isValid() && c.isSampled() ? "00-" + c.getTraceId() + "-" + c.getSpanId() + "-01" : "";
    }

    /** The W3C {@code traceparent} the frames carry ({@code 00-<trace id>-<span id>-01}), "" when untraced. */
    public String traceparent() {
      return traceparent;
    }

    /** A frame of {@code layerId} went out: {@code tokens} hidden rows, {@code rows} output rows asked for, {@code bytes}. */
    public synchronized void sent(int layerId, long tokens, long rows, long bytes) {
      if (this == NONE || ended) return;
      frames++;
      layers.set(layerId);
      this.tokens += tokens;
      this.rows += rows;
      dispatchBytes += bytes;
    }

    /** A frame sent at {@code sentNanos} was answered with {@code bytes}; {@code error} null when it has outputs. */
    public synchronized void answered(long sentNanos, long bytes, String error) {
      if (this == NONE || ended) return;
      answered++;
      combineBytes += bytes;
      long now = System.nanoTime();
      roundTripNanos += now - sentNanos;
      lastAnswerNanos = now;
      if (error != null && failed++ == 0) firstFailure = error;
    }

    private synchronized void end() {
      if (ended) return;
      ended = true;
      span.setAttribute(FRAMES, frames).setAttribute(LAYERS, (long) layers.cardinality())
          .setAttribute(LAYER_IDS, layers.stream().mapToObj(l -> (long) l).toList()).setAttribute(TOKENS, tokens).setAttribute(ROWS, rows)
          .setAttribute(DISPATCH_SIZE, dispatchBytes).setAttribute(COMBINE_SIZE, combineBytes).setAttribute(ROUND_TRIP_DURATION, roundTripNanos / 1e9);
      if (failed > 0) span.setAttribute(FAILED_FRAMES, failed);
      if (answered < frames) span.setStatus(StatusCode.ERROR, (frames - answered) + " of " + frames + " frames unanswered when the step ended"
          + (firstFailure == null ? "" : "; first failure: " + firstFailure));
      else if (failed > 0) span.setStatus(StatusCode.ERROR, firstFailure);
      span.end(epoch(answered == frames && answered > 0 ? lastAnswerNanos : System.nanoTime()), TimeUnit.NANOSECONDS);
    }
  }

  private static final java.time.Instant EPOCH_ANCHOR = java.time.Instant.now();
  private static final long NANO_ANCHOR = System.nanoTime();

  /** {@code System.nanoTime()} as nanoseconds since the epoch (start and end on one clock). */
  private static long epoch(long nanoTime) {
    return EPOCH_ANCHOR.getEpochSecond() * 1_000_000_000L + EPOCH_ANCHOR.getNano() + (nanoTime - NANO_ANCHOR);
  }
}
