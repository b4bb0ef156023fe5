package io.moemesh.enginehost.telemetry;

import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.common.v1.SamplingParams;
import io.moemesh.proto.common.v1.Usage;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/**
 * The engine's span of one RPC (prefill-svc's Prefill, decode-svc's Generate), put around the service method from
 * outside, so neither the gRPC adapter nor the engine knows about it. The span is named {@code "{role} {model}"}
 * ({@code prefill tiny}), INTERNAL, a child of the gRPC server span (whose context came in the call's metadata);
 * it is current while the method runs, so what the method starts — the KV transfer — becomes its child; it ends
 * when the call closes, with the GenAI attributes of the request and of the last response. Nothing per token: a
 * response only replaces the reference to the last one. While the call lasts, the engine steps that run the request
 * find its span through {@link StepTracing}.
 *
 * @param <Q> the request message
 * @param <R> the response message
 */
public abstract class EngineCallTracing<Q, R> implements ServerInterceptor {
  private final Tracer tracer;
  private final String fullMethodName;
  private final String role;
  private final Supplier<String> modelName;
  private final StepTracing steps;

  /** @param modelName the served model's name, "unknown" while it loads ({@code EngineHost::modelName}) */
  protected EngineCallTracing(Tracer tracer, MethodDescriptor<Q, R> method, String role, Supplier<String> modelName, StepTracing steps) {
    this.tracer = tracer;
    this.modelName = modelName;
    this.steps = steps;
    this.fullMethodName = method.getFullMethodName();
    this.role = role;
  }

  /** The served model's name ({@code gen_ai.request.model}), "unknown" while loading; asked when a request arrives. */
  private String model() {
    return modelName.get();
  }

  /** The request's id: the engine's, so the steps that run it find its span ({@link StepTracing}). */
  protected abstract String requestId(Q request);

  /** Sets the request's attributes ({@code gen_ai.request.*}, {@code gen_ai.response.id}). */
  protected abstract void requestAttributes(Q request, Span span);

  /** Sets the attributes of the call's last response (finish reason, usage). */
  protected abstract void responseAttributes(R last, Span span);

  /** The attributes both engine RPCs share: request id, sampling and prompt length. */
  protected static void requestAttributes(String requestId, SamplingParams sampling, int promptTokens, Span span) {
    span.setAttribute(GenAiAttributes.RESPONSE_ID, requestId);
    span.setAttribute(GenAiAttributes.REQUEST_TEMPERATURE, sampling.getTemperature());
    if (sampling.getTopP() != 0) span.setAttribute(GenAiAttributes.REQUEST_TOP_P, sampling.getTopP()); // proto3 0 = unset
    if (sampling.hasSeed()) span.setAttribute(GenAiAttributes.REQUEST_SEED, sampling.getSeed());
    span.setAttribute(GenAiAttributes.USAGE_INPUT_TOKENS, (long) promptTokens);
  }

  /** The usage (with the request's draft acceptance, if it verified drafts) and finish reason of a last response, each if it has one. */
  protected static void outcomeAttributes(Usage usage, FinishReason finish, Span span) {
    if (usage != null) {
      span.setAttribute(GenAiAttributes.USAGE_INPUT_TOKENS, (long) usage.getPromptTokens());
      span.setAttribute(GenAiAttributes.USAGE_OUTPUT_TOKENS, (long) usage.getCompletionTokens());
      if (usage.getDraftTokens() > 0) {
        span.setAttribute(GenAiAttributes.SPEC_DECODE_DRAFT_TOKENS, (long) usage.getDraftTokens());
        span.setAttribute(GenAiAttributes.SPEC_DECODE_ACCEPTED_TOKENS, (long) usage.getAcceptedDraftTokens());
      }
    }
    if (finish != FinishReason.FINISH_REASON_UNSPECIFIED)
      span.setAttribute(GenAiAttributes.RESPONSE_FINISH_REASONS, List.of(GenAiAttributes.finishReason(finish)));
  }

  @Override
  public <A, B> ServerCall.Listener<A> interceptCall(ServerCall<A, B> call, Metadata headers,
      ServerCallHandler<A, B> next) {
    if (!call.getMethodDescriptor().getFullMethodName().equals(fullMethodName)) return next.startCall(call, headers);
    TracedCall<A, B> traced = new TracedCall<>(call);
    return new TracedListener<>(next.startCall(traced, headers), traced);
  }

  /** Holds the span (from the request message on) and the last response; ends the span on close. */
  private final class TracedCall<A, B> extends SimpleForwardingServerCall<A, B> {
    private final AtomicBoolean ended = new AtomicBoolean();
    private volatile Span span;
    private volatile Context context;
    private volatile B last;
    private volatile String requestId;

    TracedCall(ServerCall<A, B> call) {
      super(call);
    }

    @SuppressWarnings("unchecked") // the method descriptor matched: A is Q
    void start(A request) {
      if (span != null) return;
      String model = model();
      Span s = tracer.spanBuilder(role + " " + model).setParent(Context.current())
          .setAttribute(GenAiAttributes.OPERATION_NAME, GenAiAttributes.TEXT_COMPLETION)
          .setAttribute(GenAiAttributes.PROVIDER_NAME, GenAiAttributes.PROVIDER)
          .setAttribute(GenAiAttributes.REQUEST_MODEL, model).startSpan();
      requestAttributes((Q) request, s);
      context = Context.current().with(s);
      requestId = requestId((Q) request);
      steps.started(requestId, context);
      span = s;
    }

    Scope makeCurrent() {
      Context c = context;
      return c == null ? Scope.noop() : c.makeCurrent();
    }

    @Override
    public void sendMessage(B message) {
      last = message;
      super.sendMessage(message);
    }

    @Override
    public void close(Status status, Metadata trailers) {
      end(status);
      super.close(status, trailers);
    }

    @SuppressWarnings("unchecked") // B is R
    void end(Status status) {
      Span s = span;
      if (s == null || !ended.compareAndSet(false, true)) return;
      steps.ended(requestId, context);
      B response = last;
      if (response != null) responseAttributes((R) response, s);
      if (!status.isOk()) {
        s.setStatus(StatusCode.ERROR, status.getDescription() == null ? status.getCode().name() : status.getDescription());
        s.setAttribute(GenAiAttributes.ERROR_TYPE, status.getCode().name());
      }
      s.end();
    }
  }

  /** Starts the span with the request and makes it current while the service method runs. */
  private static final class TracedListener<A, B> extends SimpleForwardingServerCallListener<A> {
    private final EngineCallTracing<?, ?>.TracedCall<A, B> call;

    TracedListener(ServerCall.Listener<A> delegate, EngineCallTracing<?, ?>.TracedCall<A, B> call) {
      super(delegate);
      this.call = call;
    }

    @Override
    public void onMessage(A message) {
      call.start(message);
      try (Scope ignored = call.makeCurrent()) {
        super.onMessage(message);
      }
    }

    @Override
    public void onHalfClose() {
      try (Scope ignored = call.makeCurrent()) {
        super.onHalfClose();
      }
    }

    @Override
    public void onCancel() {
      call.end(Status.CANCELLED);
      super.onCancel();
    }
  }
}
