package io.moemesh.planner;

import java.net.InetAddress;
import java.net.InetSocketAddress;

/** A replica process: serves recorded /q/metrics ({@code args[1]}) on loopback port {@code args[0]} until stopped. */
public final class RecordedReplicaMain {
  public static void main(String[] args) throws Exception {
    var server = com.sun.net.httpserver.HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), Integer.parseInt(args[0])), 0);
    byte[] body = RecordedReplicaMain.class.getResourceAsStream("/scrapes/" + args[1]).readAllBytes();
    server.createContext("/q/metrics", exchange -> {
      exchange.sendResponseHeaders(200, body.length);
      try (var out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    server.start();
  }
}
