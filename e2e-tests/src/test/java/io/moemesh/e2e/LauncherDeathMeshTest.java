package io.moemesh.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A launcher killed with {@code kill -9} takes the services it started with it (docs/reliability.md, "When the launcher
 * dies"): no shutdown hook of the launcher runs, yet each of its services sees it gone and stops as on SIGTERM — an
 * engine drains — so that no orphan keeps its ports and memory. Two launchers, as real processes: the planner with its
 * local connector and a prefill and a decode replica ({@code up --planner}), and a shell that starts kv-store through
 * {@code bin/lib/mesh.sh}'s own {@code start_service} ({@code up}).
 */
class LauncherDeathMeshTest {
  static final Path MODEL = ServiceProcess.ROOT.resolve("models/demo").toAbsolutePath();
  static final Path WORK = ServiceProcess.ROOT.resolve("e2e-tests/target/launcher-death").toAbsolutePath();
  static final Path LOGS = ServiceProcess.ROOT.resolve("e2e-tests/target/e2e-logs/launcher-death").toAbsolutePath();
  /** From the kill to every service's exit: the watch looks twice a second, then the service's own shutdown and drain. */
  static final Duration EXIT_BOUND = Duration.ofSeconds(60);
  private final List<AutoCloseable> cleanup = new ArrayList<>();

  @AfterEach
  void stopWhatIsLeft() throws Exception {
    for (AutoCloseable c : cleanup.reversed()) c.close();
  }

  @Test
  void theReplicasOfAPlannerKilledWithKill9DrainAndExit() throws Exception {
    Files.createDirectories(WORK);
    int prefillHttp = freePair(), prefillGrpc = prefillHttp + 1, decodeHttp = freePair(), decodeGrpc = decodeHttp + 1;
    var kvStore = ServiceProcess.start("kv-store", "launcher-death-kv-store", List.of("moemesh.kv-store.max-bytes=64M"));
    cleanup.add(kvStore);
    List<String> engine = List.of("moemesh.engine.model-dir=" + MODEL, "moemesh.engine.kv-cache-memory=32M", "moemesh.engine.threads=1");
    Path prefillLaunch = launchFile("prefill", "prefill-svc", DisaggregatedMeshTest.with(engine, "moemesh.prefill.kv-store=" + kvStore.grpcAddress()));
    Path decodeLaunch = launchFile("decode", "decode-svc", DisaggregatedMeshTest.with(engine, "moemesh.decode.drain-timeout=5s"));
    Path profile = WORK.resolve("profile.json");
    Files.writeString(profile, """
        {"prefill": {"tokensPerSecondPerReplica": 100000, "ttftTargetMs": 5000},
         "decode": {"concurrencyPerReplica": 3, "itlTargetMs": 50}, "measuredOn": "LauncherDeathMeshTest"}
        """);
    for (String stage : List.of("prefill", "decode")) Files.deleteIfExists(LOGS.resolve(stage + "-0.log"));
    var planner = ServiceProcess.start("planner", "launcher-death-planner", List.of("moemesh.planner.connector=local",
        "moemesh.planner.ttft-target=5s", "moemesh.planner.itl-target=50ms", "moemesh.planner.profile=" + profile,
        "moemesh.planner.interval=1s", "moemesh.planner.prefill.min-replicas=1", "moemesh.planner.prefill.max-replicas=1",
        "moemesh.planner.decode.min-replicas=1", "moemesh.planner.decode.max-replicas=1",
        "moemesh.planner.local.prefill-launch=" + prefillLaunch, "moemesh.planner.local.decode-launch=" + decodeLaunch,
        "moemesh.planner.local.prefill-http-base=" + prefillHttp, "moemesh.planner.local.decode-http-base=" + decodeHttp,
        "moemesh.planner.local.log-dir=" + LOGS));
    cleanup.add(planner);
    planner.awaitReady(DisaggregatedMeshTest.READY);
    await().atMost(DisaggregatedMeshTest.READY).pollInterval(Duration.ofMillis(200))
        .until(() -> planner.handle().children().count() == 2 && ready(prefillHttp) && ready(decodeHttp));
    List<ProcessHandle> replicas = planner.handle().children().toList();
    replicas.forEach(r -> cleanup.add(() -> r.destroyForcibly())); // should the assertions below fail

    long killedAt = System.nanoTime();
    planner.kill();
    long exitMs = awaitExit(replicas, killedAt);
    System.out.printf("launcher death: the planner's 2 replicas exited %d ms after its kill -9%n", exitMs);
    assertThat(List.of(prefillHttp, prefillGrpc, decodeHttp, decodeGrpc)).as("the replicas' ports").allSatisfy(p -> assertThat(free(p)).isTrue());
    String gone = "launcher (pid " + planner.handle().pid() + ") is gone: stopping";
    assertThat(Files.readString(LOGS.resolve("prefill-0.log"))).contains(gone);
    assertThat(Files.readString(LOGS.resolve("decode-0.log"))).contains(gone).as("decode drained, as on SIGTERM").contains("draining: readiness down");
  }

  @Test
  void theServicesOfAnUpShellKilledWithKill9Exit() throws Exception {
    Files.createDirectories(LOGS);
    int http = ServiceProcess.freePort(), grpc = ServiceProcess.freePort();
    Path log = LOGS.resolve("kv-store.log");
    Files.deleteIfExists(log);
    // bin/moemesh up's own functions, as cmd_up calls them: the shell stays in `wait`, as up does in the foreground
    String script = """
        source "$ROOT/bin/lib/mesh.sh"
        MOEMESH_JVM_ARGS=(--enable-native-access=ALL-UNNAMED -Xmx256m)
        stop_with_this_shell
        start_service kv-store kv-store "$HTTP" "quarkus.grpc.server.port=$GRPC" moemesh.kv-store.max-bytes=16M
        wait
        """;
    Files.createDirectories(WORK);
    var builder = new ProcessBuilder("bash", "-c", script).redirectErrorStream(true).redirectOutput(WORK_LOG.toFile());
    builder.environment().putAll(java.util.Map.of("ROOT", ServiceProcess.ROOT.toAbsolutePath().toString(), "MESH_LOGS", LOGS.toString(),
        "JAVA_HOME", System.getProperty("java.home"), "HTTP", Integer.toString(http), "GRPC", Integer.toString(grpc)));
    Process shell = builder.start();
    cleanup.add(() -> shell.destroyForcibly().waitFor());
    await().atMost(DisaggregatedMeshTest.READY).pollInterval(Duration.ofMillis(200)).until(() -> ready(http));
    List<ProcessHandle> services = shell.toHandle().children().toList();
    assertThat(services).as("kv-store, the shell's child").hasSize(1);
    services.forEach(s -> cleanup.add(() -> s.destroyForcibly()));

    long killedAt = System.nanoTime();
    shell.destroyForcibly().waitFor();
    long exitMs = awaitExit(services, killedAt);
    System.out.printf("launcher death: kv-store exited %d ms after its shell's kill -9%n", exitMs);
    assertThat(List.of(http, grpc)).as("kv-store's ports").allSatisfy(p -> assertThat(free(p)).isTrue());
    assertThat(Files.readString(log)).contains("launcher (pid " + shell.pid() + ") is gone: stopping");
  }

  private static final Path WORK_LOG = WORK.resolve("shell.log");

  /**
   * Waits up to {@link #EXIT_BOUND} for every process to exit, looking every 20 ms (not {@code onExit}, which for a process
   * that is not this one's child looks ever less often); returns the milliseconds from {@code killedAt} to the last exit.
   */
  private static long awaitExit(List<ProcessHandle> processes, long killedAt) {
    await().atMost(EXIT_BOUND).pollInterval(Duration.ofMillis(20)).until(() -> processes.stream().noneMatch(ProcessHandle::isAlive));
    return (System.nanoTime() - killedAt) / 1_000_000;
  }

  /** A launch file for the planner: the service's command, one argument a line, its ports as placeholders. */
  private static Path launchFile(String stage, String module, List<String> properties) throws IOException {
    List<String> args = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--enable-native-access=ALL-UNNAMED", "-Xmx1g", "-Dquarkus.http.port={httpPort}", "-Dquarkus.grpc.server.port={grpcPort}"));
    properties.forEach(p -> args.add("-D" + p));
    args.addAll(List.of("-jar", ServiceProcess.ROOT.resolve(module).resolve("target/quarkus-app/quarkus-run.jar").toAbsolutePath().toString()));
    Path file = WORK.resolve(stage + ".launch");
    Files.write(file, args);
    return file;
  }

  /** A free port p with p + 1 free too (a replica's HTTP and gRPC ports), from {@link ServiceProcess#freePort}'s sequence. */
  private static int freePair() throws IOException {
    for (int attempt = 0; attempt < 100; attempt++) {
      int p = ServiceProcess.freePort();
      if (ServiceProcess.freePort() == p + 1) return p;
    }
    throw new IOException("no two consecutive free ports");
  }

  private static boolean ready(int httpPort) {
    try {
      return java.net.http.HttpClient.newBuilder().version(java.net.http.HttpClient.Version.HTTP_1_1).build()
          .send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://localhost:" + httpPort + "/q/health/ready"))
              .timeout(Duration.ofSeconds(5)).build(), java.net.http.HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** Whether nothing listens on the port: it binds (on every address, as the services do). */
  private static boolean free(int port) {
    try (var s = new ServerSocket(port)) {
      return true;
    } catch (IOException taken) {
      return false;
    }
  }
}
