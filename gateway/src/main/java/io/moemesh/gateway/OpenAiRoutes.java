package io.moemesh.gateway;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moemesh.gateway.GenerationRequest.Endpoint;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The OpenAI-compatible HTTP API: {@code POST /v1/chat/completions}, {@code POST /v1/completions},
 * {@code GET /v1/models[/{id}]}. Vert.x Web handlers rather than JAX-RS resources: the status of a streaming answer
 * is only known after asynchronous validation, the SSE framing must be OpenAI's byte for byte, and the connection's
 * close must cancel the mesh calls. The event loop only does I/O: parsing, the chat template and tokenization run
 * on a worker ({@code executeBlocking}); detokenization runs on the gRPC callback threads.
 */
@ApplicationScoped
public class OpenAiRoutes {
  private final GatewayConfig config;
  private final ServedModel model;
  private final Replicas replicas;
  private final Generations generations;
  private final GatewayMetrics metrics;
  private final GenerationTracing tracing;
  private final Vertx vertx;
  private final RequestParser parser;
  private final Preparer preparer;
  private final Set<String> apiKeys;
  private final AtomicInteger inFlight = new AtomicInteger();
  private final PromptQueue prompts;

  OpenAiRoutes(GatewayConfig config, ServedModel model, Replicas replicas, Generations generations,
      GatewayMetrics metrics, GenerationTracing tracing, Vertx vertx) {
    this.config = config;
    this.model = model;
    this.replicas = replicas;
    this.generations = generations;
    this.metrics = metrics;
    this.tracing = tracing;
    this.vertx = vertx;
    this.parser = new RequestParser(config.maxN(), config.maxChoices());
    this.preparer = new Preparer(model, config.specialTokensInContent());
    this.apiKeys = Set.copyOf(config.apiKeys().orElse(List.of()));
    this.prompts = new PromptQueue(config.maxQueueWait(), System::nanoTime);
    metrics.promptQueue(prompts);
  }

  void register(@Observes Router router) {
    BodyHandler body = BodyHandler.create(false).setBodyLimit(config.maxBodySize().asLongValue());
    router.route("/v1/*").handler(this::authenticate);
    router.get("/v1/models").handler(this::listModels);
    router.get("/v1/models/:id").handler(this::getModel);
    router.post("/v1/chat/completions").handler(body).handler(ctx -> generate(ctx, Endpoint.CHAT));
    router.post("/v1/completions").handler(body).handler(ctx -> generate(ctx, Endpoint.COMPLETION));
  }

  private void authenticate(RoutingContext ctx) {
    if (apiKeys.isEmpty()) {
      ctx.next();
      return;
    }
    String auth = ctx.request().getHeader("Authorization");
    if (auth == null || !auth.startsWith("Bearer ")) {
      ResponseWriter.sendError(ctx.response(), ApiError.unauthorized("You didn't provide an API key. Provide it "
          + "in the Authorization header as 'Authorization: Bearer YOUR_KEY'."));
    } else if (!apiKeys.contains(auth.substring("Bearer ".length()).trim())) {
      ResponseWriter.sendError(ctx.response(), ApiError.unauthorized("Incorrect API key provided."));
    } else {
      ctx.next();
    }
  }

  private void listModels(RoutingContext ctx) {
    ObjectNode root = JsonNodeFactory.instance.objectNode().put("object", "list");
    root.putArray("data").add(modelJson());
    ctx.response().putHeader("Content-Type", "application/json").end(root.toString());
  }

  private void getModel(RoutingContext ctx) {
    String id = ctx.pathParam("id");
    if (!model.accepts(id)) {
      ResponseWriter.sendError(ctx.response(), ApiError.modelNotFound(id));
      return;
    }
    ctx.response().putHeader("Content-Type", "application/json").end(modelJson().toString());
  }

  private ObjectNode modelJson() {
    return JsonNodeFactory.instance.objectNode().put("id", model.id()).put("object", "model")
        .put("created", model.created()).put("owned_by", "moemesh").put("max_model_len", model.contextLength());
  }

  private void generate(RoutingContext ctx, Endpoint endpoint) {
    long start = System.nanoTime();
    io.opentelemetry.context.Context httpSpan = io.opentelemetry.context.Context.current(); // the request's server span
    RequestIds.Ids ids = RequestIds.of(ctx.request().getHeader(RequestIds.HEADER), endpoint);
    ctx.response().putHeader(RequestIds.HEADER, ids.correlationId());
    ApiError refused = admit();
    if (refused != null) {
      ResponseWriter.sendError(ctx.response(), refused);
      metrics.requestEnded(endpoint, refused.status(), java.time.Duration.ofNanos(System.nanoTime() - start));
      return;
    }
    Buffer buffer = ctx.body().buffer();
    byte[] body = buffer == null ? new byte[0] : buffer.getBytes();
    Context eventLoop = Vertx.currentContext();
    vertx.<PreparedRequest>executeBlocking(() -> preparer.prepare(parser.parse(endpoint, body)), false)
        .onComplete(prepared -> {
          if (prepared.failed()) {
            ApiError error = ProtoMapping.toApiError(prepared.cause(), config.retryAfter());
            ResponseWriter.sendError(ctx.response(), error);
            metrics.requestEnded(endpoint, error.status(), java.time.Duration.ofNanos(System.nanoTime() - start));
            inFlight.decrementAndGet();
            return;
          }
          if (ctx.response().closed()) { // the client left while we tokenized: nothing to run (one slot taken so far)
            metrics.requestEnded(endpoint, 499, java.time.Duration.ofNanos(System.nanoTime() - start));
            inFlight.decrementAndGet();
            return;
          }
          int choices = prepared.result().numChoices(); // each choice is a generation in flight: admit the rest too
          if (choices > 1 && inFlight.addAndGet(choices - 1) > config.maxInFlight()) {
            inFlight.addAndGet(-choices);
            ApiError saturated = ApiError.saturated("The mesh is saturated: " + config.maxInFlight()
                + " generations in flight; retry later", config.retryAfter());
            ResponseWriter.sendError(ctx.response(), saturated);
            metrics.requestEnded(endpoint, saturated.status(), java.time.Duration.ofNanos(System.nanoTime() - start));
            return;
          }
          PromptQueue.Entry[] queued;
          try {
            queued = prompts.admit(prepared.result().promptTokensPerChoice(), config.retryAfter());
          } catch (ApiError saturated) { // more prompt work queued than the mesh computes within the bound
            inFlight.addAndGet(-choices);
            ResponseWriter.sendError(ctx.response(), saturated);
            metrics.requestEnded(endpoint, saturated.status(), java.time.Duration.ofNanos(System.nanoTime() - start));
            return;
          }
          var header = new OpenAiJson.Header(ids.meshId(), endpoint, System.currentTimeMillis() / 1000, model.id());
          var writer = new ResponseWriter(ctx.response(), prepared.result(), header, metrics, config.retryAfter(),
              config.sseKeepAlive(), start, () -> inFlight.addAndGet(-choices));
          GenerationSpan span = tracing.start(httpSpan, prepared.result(), ids, model.id());
          writer.start(span.observe(generations.run(prepared.result(), ids, queued, span)), eventLoop);
        });
  }

  /**
   * Null if the request may proceed (and now counts as in flight), else the answer: 503 with no decode replica reachable;
   * 429 when every decode replica reports its KV cache nearly full, or with {@code max-in-flight} generations running.
   */
  private ApiError admit() {
    if (!replicas.anyDecodeReachable()) {
      return ApiError.unavailable("No decode replica is reachable; retry later", config.retryAfter());
    }
    if (!replicas.anyDecodeHasKvRoom()) { // a stream admitted now would wait inside a full replica, unbounded
      return ApiError.saturated(String.format("The mesh is out of KV cache room: every decode replica is at least %.0f%% full (the"
          + " emptiest %.0f%%); retry later", Replicas.KV_NEARLY_FULL * 100, replicas.leastDecodeKvUsage() * 100), config.retryAfter());
    }
    int now = inFlight.incrementAndGet();
    if (now > config.maxInFlight()) {
      inFlight.decrementAndGet();
      return ApiError.saturated("The mesh is saturated: " + config.maxInFlight()
          + " requests in flight; retry later", config.retryAfter());
    }
    return null;
  }
}
