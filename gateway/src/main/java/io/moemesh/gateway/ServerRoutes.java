package io.moemesh.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.util.function.Function;

/**
 * vLLM's server routes beside the OpenAI API — {@code GET /health} (200 when ready to serve, else 503),
 * {@code GET /version}, {@code POST /tokenize} ({@code prompt} or chat {@code messages} → ids),
 * {@code POST /detokenize} (ids → text) — and OpenAI-shaped JSON for the router's own answers: 404, 405, a failed
 * route (413 and the body handler's other 4xx, or a bug's 500), and 414 and 431 for a request URI or header block over
 * the gateway's limits. (Netty's own, higher limits answer 414 and 431 before any route runs, with no body: Quarkus
 * does not expose Vert.x' invalidRequestHandler, so the gateway keeps its limits below them, where routes see them.)
 */
@ApplicationScoped
public class ServerRoutes {
  @Inject GatewayConfig config;
  @Inject ServedModel model;
  @Inject Replicas replicas;
  @Inject Vertx vertx;

  void register(@Observes Router router) {
    BodyHandler body = BodyHandler.create(false).setBodyLimit(config.maxBodySize().asLongValue());
    router.route().order(Integer.MIN_VALUE).handler(this::withinLimits);
    router.route().failureHandler(this::failed);
    router.get("/health").handler(this::health);
    router.get("/version").handler(ctx -> json(ctx, JsonNodeFactory.instance.objectNode().put("version", version())));
    router.post("/tokenize").handler(body).handler(ctx -> blocking(ctx, this::tokenize));
    router.post("/detokenize").handler(body).handler(ctx -> blocking(ctx, this::detokenize));
    router.errorHandler(404, ctx -> ResponseWriter.sendError(ctx.response(),
        ApiError.notFound("No route " + ctx.request().method() + " " + ctx.request().path())));
    router.errorHandler(400, ctx -> ResponseWriter.sendError(ctx.response(), new ApiError(400, "invalid_request_error",
        "We could not read your request", null, null, null)));
    router.errorHandler(405, ctx -> ResponseWriter.sendError(ctx.response(),
        new ApiError(405, "invalid_request_error", "Method " + ctx.request().method() + " is not allowed on "
            + ctx.request().path(), null, "method_not_allowed", null)));
  }

  /**
   * 400 for a request target that is no URI ({@link GatewayMain} turns Quarkus' own check, which answers without a
   * body, off), 414 for one longer than the gateway's limit, 431 for a larger header block; else on to the routes.
   */
  private void withinLimits(RoutingContext ctx) {
    try {
      new java.net.URI(ctx.request().uri());
    } catch (java.net.URISyntaxException e) {
      ResponseWriter.sendError(ctx.response(), new ApiError(400, "invalid_request_error",
          "The request target is not a valid URI: " + e.getReason() + " at index " + e.getIndex(), null, null, null));
      return;
    }
    int uri = ctx.request().uri().length();
    if (uri > config.maxUriLength()) {
      ResponseWriter.sendError(ctx.response(), new ApiError(414, "invalid_request_error", "The request URI is " + uri
          + " characters long; at most " + config.maxUriLength() + " are allowed", null, null, null));
      return;
    }
    long headers = 0;
    for (var h : ctx.request().headers()) headers += h.getKey().length() + h.getValue().length() + 4; // "name: value\r\n"
    long maxHeaders = config.maxHeaderSize().asLongValue();
    if (headers > maxHeaders) {
      ResponseWriter.sendError(ctx.response(), new ApiError(431, "invalid_request_error", "The request headers take "
          + headers + " bytes; at most " + maxHeaders + " are allowed", null, null, null));
      return;
    }
    ctx.next();
  }

  /**
   * Failures of the routes in OpenAI's shape, not Vert.x' plain text: the body handler's 413 (body over the limit), its
   * other 4xx (an {@code Expect} it cannot meet, a form body it cannot decode) as the client's error, anything else as
   * the gateway's own 500.
   */
  private void failed(RoutingContext ctx) {
    int status = ctx.statusCode();
    ApiError error;
    if (status == 413) {
      error = new ApiError(413, "invalid_request_error", "The request body is larger than "
          + config.maxBodySize().asLongValue() + " bytes", null, null, null);
    } else if (status >= 400 && status < 500) {
      String why = ctx.failure() != null ? ctx.failure().getMessage()
          : io.netty.handler.codec.http.HttpResponseStatus.valueOf(status).reasonPhrase();
      error = new ApiError(status, "invalid_request_error", "We could not read your request: " + why, null, null, null);
    } else {
      String why = ctx.failure() == null ? "status " + status : ctx.failure().toString();
      error = ApiError.backend(500, "The gateway failed: " + why);
    }
    ResponseWriter.sendError(ctx.response(), error);
  }

  private void health(RoutingContext ctx) {
    if (GatewayHealthChecks.ready(model, replicas)) ctx.response().setStatusCode(200).end();
    else ResponseWriter.sendError(ctx.response(), ApiError.unavailable("No decode replica is reachable", null));
  }

  private static String version() {
    String v = ServerRoutes.class.getPackage().getImplementationVersion();
    return v != null ? v : "0.1.0-SNAPSHOT";
  }

  /** {"model"?, "prompt": text, "add_special_tokens"?} or {"model"?, "messages": [...]} → ids, as vLLM answers. */
  private ObjectNode tokenize(JsonNode root) {
    checkModel(root);
    int[] ids;
    if (root.has("messages")) {
      var template = model.chatTemplate().orElseThrow(() -> ApiError.invalid("The model has no chat template", "messages"));
      boolean generationPrompt = !root.has("add_generation_prompt") || root.get("add_generation_prompt").asBoolean(true);
      ids = io.moemesh.tokenizer.ChatEncoder.encode(model.tokenizer(), template, ChatMessages.parse(root.get("messages")),
          generationPrompt, config.specialTokensInContent());
    } else {
      JsonNode prompt = root.get("prompt");
      if (prompt == null || !prompt.isTextual()) throw ApiError.invalid("prompt must be a string", "prompt");
      boolean special = !root.has("add_special_tokens") || root.get("add_special_tokens").asBoolean(true);
      ids = model.tokenizer().encode(prompt.asText(), special);
    }
    ObjectNode out = JsonNodeFactory.instance.objectNode();
    var tokens = out.putArray("tokens");
    for (int id : ids) tokens.add(id);
    return out.put("count", ids.length).put("max_model_len", model.contextLength());
  }

  /** {"model"?, "tokens": [ids]} → {"prompt": text}. */
  private ObjectNode detokenize(JsonNode root) {
    checkModel(root);
    JsonNode tokens = root.get("tokens");
    if (tokens == null || !tokens.isArray()) throw ApiError.invalid("tokens must be an array of token ids", "tokens");
    int vocab = model.tokenizer().vocabSize();
    int[] ids = new int[tokens.size()];
    for (int i = 0; i < ids.length; i++) {
      JsonNode t = tokens.get(i);
      if (!t.canConvertToInt() || !t.isIntegralNumber() || t.asInt() < 0 || t.asInt() >= vocab)
        throw ApiError.invalid("tokens[" + i + "] must be a token id in [0, " + vocab + "), got " + t, "tokens");
      ids[i] = t.asInt();
    }
    return JsonNodeFactory.instance.objectNode().put("prompt", model.tokenizer().decode(ids, false));
  }

  private void checkModel(JsonNode root) {
    JsonNode name = root.get("model");
    if (name != null && !name.isNull() && !(name.isTextual() && model.accepts(name.asText())))
      throw ApiError.modelNotFound(name.toString());
  }

  /** Parses the body and runs work (tokenizing) off the event loop; an ApiError becomes its JSON answer. */
  private void blocking(RoutingContext ctx, Function<JsonNode, ObjectNode> work) {
    Buffer buffer = ctx.body().buffer();
    byte[] body = buffer == null ? new byte[0] : buffer.getBytes();
    vertx.<ObjectNode>executeBlocking(() -> work.apply(RequestParser.readObject(body)), false).onComplete(done -> {
      if (done.succeeded()) json(ctx, done.result());
      else if (done.cause() instanceof ApiError e) ResponseWriter.sendError(ctx.response(), e);
      else ResponseWriter.sendError(ctx.response(), ApiError.backend(500, "The gateway failed: " + done.cause()));
    });
  }

  private static void json(RoutingContext ctx, ObjectNode body) {
    ctx.response().putHeader("Content-Type", "application/json").end(body.toString());
  }
}
