package io.moemesh.e2e;

import io.moemesh.telemetry.testing.Scrape;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

/**
 * What the planner's mesh tests share: launch files for its local connector (docs/planner.md, "Connectors"), ports on
 * its scheme (replica i of a stage on HTTP base + 10·i, gRPC one above), and probes of a replica by its HTTP port.
 */
final class PlannerMesh {
  private PlannerMesh() {}

  /** A launch file in {@code dir} for the planner: the service's command, one argument a line, its ports as placeholders. */
  static Path launchFile(Path dir, String stage, String module, List<String> properties) throws IOException {
    List<String> args = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--enable-native-access=ALL-UNNAMED", "-Xmx1g", "-Dquarkus.http.port={httpPort}", "-Dquarkus.grpc.server.port={grpcPort}"));
    properties.forEach(p -> args.add("-D" + p));
    args.addAll(List.of("-jar", ServiceProcess.ROOT.resolve(module).resolve("target/quarkus-app/quarkus-run.jar").toAbsolutePath().toString()));
    Files.createDirectories(dir);
    Path file = dir.resolve(stage + ".launch");
    Files.write(file, args);
    return file;
  }

  /**
   * A free port p with p + 1, p + 10 and p + 11 free too (replicas 0 and 1 of a stage: HTTP, gRPC one above), all
   * taken from {@link ServiceProcess#freePort}'s sequence so that no other service of the test is handed one of them.
   */
  static int freeBase() throws IOException {
    for (int attempt = 0; attempt < 100; attempt++) {
      int p = ServiceProcess.freePort();
      List<Integer> next = new ArrayList<>();
      for (int i = 1; i <= 11; i++) next.add(ServiceProcess.freePort());
      if (next.equals(IntStream.rangeClosed(p + 1, p + 11).boxed().toList())) return p;
    }
    throw new IOException("no twelve consecutive free ports");
  }

  private static final HttpClient PROBE = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(2)).build();

  static boolean ready(int httpPort) {
    try {
      return PROBE.send(HttpRequest.newBuilder(URI.create("http://localhost:" + httpPort + "/q/health/ready")).timeout(Duration.ofSeconds(5)).build(),
          HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** Whether anything serves HTTP on the port (a draining replica answers, 503). */
  static boolean answers(int httpPort) {
    try {
      PROBE.send(HttpRequest.newBuilder(URI.create("http://localhost:" + httpPort + "/q/health/live")).timeout(Duration.ofSeconds(5)).build(),
          HttpResponse.BodyHandlers.discarding());
      return true;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** A series of the replica on this HTTP port, summed over its labels (0 while it does not answer). */
  static double sum(int httpPort, String series) {
    try {
      String text = PROBE.send(HttpRequest.newBuilder(URI.create("http://localhost:" + httpPort + "/q/metrics")).timeout(Duration.ofSeconds(10)).build(),
          HttpResponse.BodyHandlers.ofString()).body();
      return Scrape.parse(text).sum(series);
    } catch (IOException e) {
      return 0;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 0;
    }
  }

  /** Whether the gateway on this HTTP port routes to a replica ({@code prefill@localhost:9201}): its readiness says so. */
  static boolean gatewayRoutesTo(int gatewayHttpPort, String replica) {
    try {
      String body = PROBE.send(HttpRequest.newBuilder(URI.create("http://localhost:" + gatewayHttpPort + "/q/health/ready"))
          .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body();
      return java.util.regex.Pattern.compile("\"" + java.util.regex.Pattern.quote(replica) + "\"\\s*:\\s*\"reachable\"").matcher(body).find();
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** One of the planner's series; the planner must export it. */
  static double plannerSeries(ServiceProcess planner, String series) {
    return planner.scrape().find(series).orElseThrow(() -> new AssertionError("the planner exports no " + series));
  }
}
