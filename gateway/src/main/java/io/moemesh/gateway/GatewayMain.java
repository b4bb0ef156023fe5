package io.moemesh.gateway;

import io.quarkus.runtime.Quarkus;
import io.quarkus.runtime.annotations.QuarkusMain;

/**
 * The gateway's entry point. Quarkus answers a request target that {@link java.net.URI} rejects ({@code //x},
 * {@code %zz}) with an empty 400 before any route runs; with its check off ({@code vertx.disableURIValidation}, read
 * once as the HTTP server starts) the gateway makes the same check itself, first of all, and answers in OpenAI's
 * error shape ({@link ServerRoutes}).
 */
@QuarkusMain
public final class GatewayMain {
  private GatewayMain() {}

  public static void main(String... args) {
    System.setProperty("vertx.disableURIValidation", "true");
    Quarkus.run(args);
  }
}
