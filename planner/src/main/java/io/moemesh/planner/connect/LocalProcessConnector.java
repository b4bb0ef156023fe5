package io.moemesh.planner.connect;

import io.moemesh.lifecycle.LauncherConfig;
import io.moemesh.planner.Stage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Replicas as local processes, as {@code bin/moemesh up} runs them: replica i of a stage is the stage's command with
 * {@code {index}}, {@code {httpPort}} and {@code {grpcPort}} filled in (HTTP base + 10·i, gRPC one above, as up's
 * ports), its output in {@code <logDir>/<stage>-<i>.log}. Scaling up starts the next indices; scaling down stops the
 * highest with SIGTERM (Quarkus finishes its calls in flight) and, after {@code grace}, kills it. It is also the
 * discovery of those processes. It never adopts processes it did not start. Each replica gets this process's pid in
 * {@link LauncherConfig#PID_VARIABLE}: if the planner dies without {@link #close()} (kill -9, a crash), its replicas
 * see it and stop as on SIGTERM (the lifecycle module's launcher watch), rather than hold their ports as orphans.
 */
public final class LocalProcessConnector implements ReplicaConnector, ReplicaDiscovery, AutoCloseable {
  /**
   * How a stage's replica is started.
   *
   * @param command  the command line, with {@code {index}}, {@code {httpPort}}, {@code {grpcPort}} placeholders
   * @param httpBasePort the HTTP port of replica 0 (up: prefill 9200, decode 9300)
   */
  public record Launch(List<String> command, int httpBasePort) {
    public Launch {
      command = List.copyOf(command);
      if (command.isEmpty()) throw new IllegalArgumentException("empty command");
    }

    int httpPort(int index) {
      return httpBasePort + 10 * index;
    }

    /**
     * A launch from a file that holds the command one argument a line (arguments may hold spaces and commas, as
     * {@code bin/moemesh up}'s service properties do); blank lines are skipped.
     */
    public static Launch read(Path file, int httpBasePort) throws IOException {
      List<String> args = Files.readAllLines(file).stream().filter(line -> !line.isBlank()).toList();
      if (args.isEmpty()) throw new IOException(file + " holds no command");
      return new Launch(args, httpBasePort);
    }

    List<String> commandFor(int index) {
      return command.stream().map(arg -> arg.replace("{index}", Integer.toString(index))
          .replace("{httpPort}", Integer.toString(httpPort(index))).replace("{grpcPort}", Integer.toString(httpPort(index) + 1))).toList();
    }
  }

  private final Map<Stage, Launch> launches = new EnumMap<>(Stage.class);
  private final Path logDir;
  private final Duration grace;
  private final Map<Stage, List<Process>> running = new EnumMap<>(Stage.class);

  public LocalProcessConnector(Map<Stage, Launch> launches, Path logDir, Duration grace) {
    this.launches.putAll(launches);
    this.logDir = logDir;
    this.grace = grace;
    for (Stage stage : Stage.values()) running.put(stage, new ArrayList<>());
  }

  @Override
  public synchronized int replicas(Stage stage) {
    return (int) running.get(stage).stream().filter(Process::isAlive).count();
  }

  @Override
  public synchronized void scale(Stage stage, int replicas) {
    if (replicas < 0) throw new IllegalArgumentException("replicas must be >= 0, not " + replicas);
    Launch launch = launches.get(stage);
    if (launch == null) throw new ConnectorException(stage, "no launch command configured");
    List<Process> processes = running.get(stage);
    // a replica that died is started again at its index (its ports), then the next indices
    for (int i = 0; i < Math.min(processes.size(), replicas); i++) {
      if (!processes.get(i).isAlive()) processes.set(i, start(stage, launch, i));
    }
    while (processes.size() < replicas) processes.add(start(stage, launch, processes.size()));
    while (processes.size() > replicas) stop(processes.removeLast());
  }

  @Override
  public synchronized List<URI> metricsUrls(Stage stage) {
    Launch launch = launches.get(stage);
    List<URI> urls = new ArrayList<>();
    List<Process> processes = running.get(stage);
    for (int i = 0; i < processes.size(); i++) {
      if (processes.get(i).isAlive()) urls.add(URI.create("http://127.0.0.1:" + launch.httpPort(i) + "/q/metrics"));
    }
    return urls;
  }

  /** Stops every process it started: SIGTERM to all at once (each drains in parallel), then waits for each. */
  @Override
  public synchronized void close() {
    List<Process> all = new ArrayList<>();
    for (List<Process> processes : running.values()) {
      all.addAll(processes);
      processes.clear();
    }
    all.forEach(Process::destroy);
    all.forEach(this::stop);
  }

  private Process start(Stage stage, Launch launch, int index) {
    try {
      Files.createDirectories(logDir);
      Path log = logDir.resolve(stage.label() + "-" + index + ".log");
      var builder = new ProcessBuilder(launch.commandFor(index)).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
      // the replica stops when this process is gone, even killed with kill -9 (no shutdown hook, no close(), runs then)
      builder.environment().put(LauncherConfig.PID_VARIABLE, Long.toString(ProcessHandle.current().pid()));
      return builder.start();
    } catch (IOException e) {
      throw new ConnectorException(stage, "starting replica " + index, e);
    }
  }

  private void stop(Process process) {
    process.destroy();
    try {
      if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
        process.destroyForcibly();
        process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
      throw new UncheckedIOException(new IOException("interrupted while stopping a replica", e));
    }
  }
}
