package io.moemesh.e2e;

import io.moemesh.telemetry.testing.Scrape;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One service of the mesh as a real process: its packaged Quarkus app ({@code MODULE/target/quarkus-app}),
 * on free ports, logging to {@code e2e-tests/target/e2e-logs/NAME.log}; {@link #awaitReady} polls
 * {@code /q/health/ready}.
 */
final class ServiceProcess implements AutoCloseable {
  static final Path ROOT = Path.of(System.getProperty("moemesh.e2e.root", ".."));
  final String name;
  final int httpPort, grpcPort;
  private final Process process;
  private final Path log;

  private ServiceProcess(String name, int httpPort, int grpcPort, Process process, Path log) {
    this.name = name;
    this.httpPort = httpPort;
    this.grpcPort = grpcPort;
    this.process = process;
    this.log = log;
  }

  static ServiceProcess start(String module, String name, List<String> properties) throws IOException {
    Files.deleteIfExists(ROOT.resolve("e2e-tests/target/e2e-logs").resolve(name + ".log"));
    return start(module, name, properties, freePort(), freePort());
  }

  /** Starts the service with these environment variables added to the test's. */
  static ServiceProcess start(String module, String name, List<String> properties, java.util.Map<String, String> env) throws IOException {
    Files.deleteIfExists(ROOT.resolve("e2e-tests/target/e2e-logs").resolve(name + ".log"));
    return start(module, name, properties, freePort(), freePort(), env);
  }

  /** Starts the service on given ports (e.g. again, after {@link #kill}). */
  static ServiceProcess start(String module, String name, List<String> properties, int http, int grpc) throws IOException {
    return start(module, name, properties, http, grpc, java.util.Map.of());
  }

  private static ServiceProcess start(String module, String name, List<String> properties, int http, int grpc,
      java.util.Map<String, String> env) throws IOException {
    Path jar = ROOT.resolve(module).resolve("target/quarkus-app/quarkus-run.jar");
    if (!Files.isRegularFile(jar)) throw new IllegalStateException(jar + " is missing: build " + module + " first (./mvnw verify builds it)");
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--enable-native-access=ALL-UNNAMED", "-Xmx1g",
        "-Dquarkus.http.port=" + http, "-Dquarkus.grpc.server.port=" + grpc));
    properties.forEach(p -> cmd.add("-D" + p));
    cmd.addAll(List.of("-jar", jar.toString()));
    Path logs = ROOT.resolve("e2e-tests/target/e2e-logs");
    Files.createDirectories(logs);
    Path log = logs.resolve(name + ".log");
    var builder = new ProcessBuilder(cmd);
    builder.environment().putAll(env);
    Process p = builder.redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    return new ServiceProcess(name, http, grpc, p, log);
  }

  /** Everything the process has logged so far (this run and, after {@link #kill}, the restarted one's). */
  String logText() throws IOException {
    return Files.readString(log);
  }

  boolean alive() {
    return process.isAlive();
  }

  /** The process (e.g. to find the processes it started). */
  ProcessHandle handle() {
    return process.toHandle();
  }

  String grpcAddress() {
    return "localhost:" + grpcPort;
  }

  /**
   * Its {@code /q/metrics} (Prometheus text). One client for every scrape, HTTP/1.1 and a deadline: tests poll metrics
   * for minutes, and a client per call (each with its own selector thread, and an h2c upgrade attempt) once hung a run.
   */
  String metrics() throws IOException, InterruptedException {
    return SCRAPER.send(HttpRequest.newBuilder(URI.create("http://localhost:" + httpPort + "/q/metrics")).timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString()).body();
  }

  /** One scrape of its {@code /q/metrics}, parsed; an IllegalStateException naming the service if it does not answer (so awaits can poll it). */
  Scrape scrape() {
    try {
      return Scrape.parse(metrics());
    } catch (IOException e) {
      throw new IllegalStateException("no metrics from " + name, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while scraping " + name, e);
    }
  }

  private static final HttpClient SCRAPER = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(10)).build();

  /** Polls readiness until it answers 200, the process dies, or the timeout passes. */
  void awaitReady(Duration timeout) throws Exception {
    var http = SCRAPER;
    var ready = HttpRequest.newBuilder(URI.create("http://localhost:" + httpPort + "/q/health/ready")).timeout(Duration.ofSeconds(5)).build();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) throw new IllegalStateException(name + " exited with " + process.exitValue() + "; log:\n" + tail());
      try {
        if (http.send(ready, HttpResponse.BodyHandlers.discarding()).statusCode() == 200) return;
      } catch (IOException notYet) {
        // not listening yet
      }
      Thread.onSpinWait();
      Thread.yield();
    }
    throw new IllegalStateException(name + " not ready after " + timeout + "; log:\n" + tail());
  }

  private String tail() throws IOException {
    List<String> lines = Files.readAllLines(log);
    return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
  }

  /**
   * A port no one listens on, from below the kernel's ephemeral range (Linux: 32768 and up), each handed out once. A
   * port of {@code new ServerSocket(0)} is one the kernel also gives outgoing connections, and once one was taken
   * that way between the pick and the service's bind ("port in use": a failed run).
   */
  static int freePort() throws IOException {
    for (int tries = 0; tries < PORTS; tries++) {
      int port = FIRST_PORT + Math.floorMod(NEXT_PORT.getAndIncrement(), PORTS);
      try (var s = new ServerSocket(port)) {
        return port;
      } catch (IOException taken) {
        // in use: the next one
      }
    }
    throw new IOException("no free port in [" + FIRST_PORT + ", " + (FIRST_PORT + PORTS) + ")");
  }

  private static final int FIRST_PORT = 20000, PORTS = 12000;
  private static final AtomicInteger NEXT_PORT = new AtomicInteger(new java.util.Random().nextInt(PORTS));

  /** kill -9: no shutdown hooks, connections dropped mid-frame. */
  void kill() throws InterruptedException {
    process.destroyForcibly().waitFor();
  }

  /** SIGSTOP: the process freezes with its sockets open (a hung service: connections accepted, nothing answered). */
  void pause() throws IOException, InterruptedException {
    signal("STOP");
  }

  /** SIGCONT after {@link #pause}. */
  void resume() throws IOException, InterruptedException {
    signal("CONT");
  }

  private void signal(String name) throws IOException, InterruptedException {
    int exit = new ProcessBuilder("kill", "-" + name, String.valueOf(process.pid())).inheritIO().start().waitFor();
    if (exit != 0) throw new IllegalStateException("kill -" + name + " " + process.pid() + " exited with " + exit);
  }

  /** SIGTERM: the service's shutdown (and drain) runs; returns at once. */
  void terminate() {
    process.destroy();
  }

  /** Waits for the process to exit; false if it still runs after {@code timeout}. */
  boolean awaitExit(Duration timeout) throws InterruptedException {
    return process.waitFor(timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() throws InterruptedException {
    try {
      if (process.isAlive()) resume(); // a paused process would ignore SIGTERM until the forced kill
    } catch (IOException | RuntimeException e) {
      // it exited meanwhile
    }
    process.destroy();
    if (!process.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)) process.destroyForcibly().waitFor();
  }

}
