package io.moemesh.planner;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;

/** A replica's {@code /q/metrics} on a real loopback port (port 0), serving the recorded text it is set to. */
public final class RecordedReplica implements AutoCloseable {
  private final HttpServer server;
  private volatile byte[] body = new byte[0];

  public RecordedReplica() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/q/metrics", exchange -> {
      byte[] b = body;
      exchange.getResponseHeaders().add("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
      exchange.sendResponseHeaders(200, b.length);
      try (var out = exchange.getResponseBody()) {
        out.write(b);
      }
    });
    server.start();
  }

  /** Serves src/test/resources/scrapes/{@code resource} from now on. */
  public RecordedReplica serve(String resource) {
    try (InputStream in = RecordedReplica.class.getResourceAsStream("/scrapes/" + resource)) {
      body = new String(in.readAllBytes(), StandardCharsets.UTF_8).getBytes(StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return this;
  }

  public URI metricsUrl() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/q/metrics");
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
