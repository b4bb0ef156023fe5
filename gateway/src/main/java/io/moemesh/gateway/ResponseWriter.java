package io.moemesh.gateway;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.subscription.Cancellable;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import java.time.Duration;
import org.jboss.logging.Logger;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes one request's choice events to its HTTP response, on the request's event loop: Server-Sent Events
 * ({@code data: {json}\n\n} chunks, then {@code data: [DONE]}) or one JSON body. A stream's status line and headers
 * go out at once (a client and every proxy between see the request was accepted, however long the prompt queue), then
 * a {@code : keep-alive} comment whenever nothing was written for {@link #keepAlive}; a failure after that ends the
 * stream with {@code data: {"error": ...}}, as OpenAI's mid-stream errors do. A JSON answer's status goes out with
 * it, so its failures are proper HTTP errors. A closed connection cancels the mesh calls.
 */
final class ResponseWriter {
  private static final Logger LOG = Logger.getLogger(ResponseWriter.class);
  private final HttpServerResponse response;
  private final PreparedRequest prepared;
  private final OpenAiJson.Header header;
  private final GatewayMetrics metrics;
  private final Duration retryAfter;
  private final long startNanos;
  private final Runnable onEnd;
  private final Duration keepAlive;
  private long keepAliveTimer = -1;
  private Vertx vertx;
  private boolean wroteSinceTick;
  private final List<ChoiceState> choices = new ArrayList<>();
  private final boolean stream;
  private final boolean usageField;
  private final boolean withLogprobs;
  private Cancellable subscription;
  private boolean headersSent;
  private boolean ended;
  private boolean firstTokenSeen;
  private int completionTokens;
  private int cachedTokens;

  /** Per choice: its text so far (non-streaming), its logprobs and finish reason. */
  private static final class ChoiceState {
    final StringBuilder text = new StringBuilder();
    final List<ChoiceEvent.TokenLogprob> logprobs = new ArrayList<>();
    boolean started;
    int textLength;
    String finishReason;
  }

  ResponseWriter(HttpServerResponse response, PreparedRequest prepared, OpenAiJson.Header header,
      GatewayMetrics metrics, Duration retryAfter, Duration keepAlive, long startNanos, Runnable onEnd) {
    this.response = response;
    this.prepared = prepared;
    this.header = header;
    this.metrics = metrics;
    this.retryAfter = retryAfter;
    this.startNanos = startNanos;
    this.onEnd = onEnd;
    this.keepAlive = keepAlive;
    this.stream = prepared.request().stream();
    this.usageField = prepared.request().includeUsage();
    this.withLogprobs = prepared.request().topLogprobs() != null;
    for (int i = 0; i < prepared.numChoices(); i++) choices.add(new ChoiceState());
  }

  /** Subscribes; events are handled on {@code eventLoop}. Call on that event loop. */
  void start(Multi<ChoiceEvent> events, Context eventLoop) {
    response.closeHandler(v -> clientGone());
    if (stream) {
      sendHeaders(200, "text/event-stream");
      response.writeHead();
      vertx = eventLoop.owner();
      keepAliveTimer = vertx.setPeriodic(keepAlive.toMillis(), id -> {
        if (!ended && !wroteSinceTick) response.write(": keep-alive\n\n");
        wroteSinceTick = false;
      });
    }
    subscription = events.emitOn(task -> eventLoop.runOnContext(v -> task.run()))
        .subscribe().with(this::onEvent, this::onFailure, this::onComplete);
    if (ended) subscription.cancel();
  }

  private void onEvent(ChoiceEvent e) {
    if (ended) return;
    if (!firstTokenSeen && e.numTokens() > 0) {
      firstTokenSeen = true;
      metrics.firstToken(sinceStart());
    }
    completionTokens += e.numTokens();
    cachedTokens = Math.max(cachedTokens, e.cachedTokens());
    ChoiceState c = choices.get(e.index());
    c.finishReason = e.finishReason();
    if (!stream) {
      c.text.append(e.text());
      c.logprobs.addAll(e.logprobs());
      return;
    }
    sendHeaders(200, "text/event-stream");
    if (!c.started && header.endpoint() == GenerationRequest.Endpoint.CHAT) {
      send(OpenAiJson.roleChunk(header, e.index(), usageField));
    }
    c.started = true;
    if (!e.text().isEmpty() || !e.logprobs().isEmpty()) {
      send(OpenAiJson.textChunk(header, e, withLogprobs, c.textLength, usageField));
      c.textLength += e.text().length();
    }
    if (e.finished()) send(OpenAiJson.finishChunk(header, e.index(), e.finishReason(), usageField));
  }

  private void onComplete() {
    if (ended) return;
    ObjectNode usage = OpenAiJson.usage(prepared.promptTokens(), completionTokens, cachedTokens);
    if (stream) {
      sendHeaders(200, "text/event-stream");
      if (usageField) send(OpenAiJson.usageChunk(header, usage));
      response.write("data: [DONE]\n\n");
      response.end();
    } else {
      List<OpenAiJson.Choice> out = new ArrayList<>();
      for (int i = 0; i < choices.size(); i++) {
        ChoiceState c = choices.get(i);
        out.add(new OpenAiJson.Choice(i, c.text.toString(), c.logprobs, c.finishReason));
      }
      sendHeaders(200, "application/json");
      response.end(OpenAiJson.response(header, out, withLogprobs, usage).toString());
    }
    metrics.tokens(prepared.promptTokens(), completionTokens);
    end(200);
  }

  private void onFailure(Throwable failure) {
    if (ended) return;
    ApiError error = ProtoMapping.toApiError(failure, retryAfter);
    if (error.status() >= 500) LOG.warnf("request %s failed: %s", header.id(), failure.toString());
    if (headersSent) {
      response.write("data: " + error.toJson() + "\n\n"); // OpenAI's mid-stream error event
      response.end();
    } else {
      sendError(response, error);
    }
    end(error.status());
  }

  private void clientGone() {
    if (ended) return;
    if (subscription != null) subscription.cancel();
    end(499);
  }

  private void end(int status) {
    ended = true;
    if (keepAliveTimer >= 0) vertx.cancelTimer(keepAliveTimer);
    metrics.requestEnded(header.endpoint(), status, sinceStart());
    onEnd.run();
  }

  private void sendHeaders(int status, String contentType) {
    if (headersSent) return;
    headersSent = true;
    response.setStatusCode(status).putHeader("Content-Type", contentType);
    if (contentType.equals("text/event-stream")) {
      response.setChunked(true).putHeader("Cache-Control", "no-cache").putHeader("X-Accel-Buffering", "no");
    }
  }

  private void send(ObjectNode chunk) {
    wroteSinceTick = true;
    response.write(Buffer.buffer("data: " + chunk + "\n\n"));
  }

  private Duration sinceStart() {
    return Duration.ofNanos(System.nanoTime() - startNanos);
  }

  /** An error as an HTTP response in OpenAI's shape, with {@code Retry-After} for 429 and 503. */
  static void sendError(HttpServerResponse response, ApiError error) {
    if (response.ended() || response.closed()) return;
    response.setStatusCode(error.status()).putHeader("Content-Type", "application/json");
    if (error.retryAfter() != null) {
      long seconds = Math.max(1, (error.retryAfter().toMillis() + 999) / 1000);
      response.putHeader("Retry-After", Long.toString(seconds));
    }
    response.end(error.toJson().toString());
  }
}
