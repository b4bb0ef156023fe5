package io.moemesh.planner.connect;

import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.planner.RecordedReplicaMain;
import io.moemesh.planner.Stage;
import io.moemesh.planner.observe.MetricsScraper;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Real processes (a JVM each, serving recorded /q/metrics on the port the connector gives it). */
class LocalProcessConnectorTest {
  final MetricsScraper scraper = new MetricsScraper(Duration.ofSeconds(2), Clock.systemUTC());

  @Test
  void startsTheNextIndicesAndStopsTheHighest() throws Exception {
    int base = freeBasePort();
    String java = ProcessHandle.current().info().command().orElseThrow();
    var launch = new LocalProcessConnector.Launch(List.of(java, "-cp", Path.of("target", "test-classes").toString(),
        RecordedReplicaMain.class.getName(), "{httpPort}", "decode-t1.txt"), base);
    try (var connector = new LocalProcessConnector(Map.of(Stage.DECODE, launch), Path.of("target", "local-replicas"), Duration.ofSeconds(10))) {
      assertThat(connector.replicas(Stage.DECODE)).isZero();
      connector.scale(Stage.DECODE, 2);
      assertThat(connector.replicas(Stage.DECODE)).isEqualTo(2);
      List<URI> urls = connector.metricsUrls(Stage.DECODE);
      assertThat(urls).containsExactly(URI.create("http://127.0.0.1:" + base + "/q/metrics"),
          URI.create("http://127.0.0.1:" + (base + 10) + "/q/metrics"));
      for (URI url : urls) assertThat(scrapeWhenUp(url).sum("vllm:num_requests_running")).isEqualTo(24);

      connector.scale(Stage.DECODE, 1);
      assertThat(connector.replicas(Stage.DECODE)).isEqualTo(1);
      assertThat(connector.metricsUrls(Stage.DECODE)).containsExactly(urls.getFirst());
      assertThat(answers(urls.get(1))).as("the stopped replica's port").isFalse();
      assertThat(answers(urls.getFirst())).isTrue();

      // a replica that dies is not counted, and the next scale starts it again at its index
      List<ProcessHandle> replica0 = ProcessHandle.current().children()
          .filter(p -> p.info().arguments().map(a -> List.of(a).contains(Integer.toString(base))).orElse(false)).toList();
      assertThat(replica0).hasSize(1);
      replica0.getFirst().destroy();
      Instant deadline = Instant.now().plusSeconds(30);
      while (connector.replicas(Stage.DECODE) != 0 && Instant.now().isBefore(deadline)) Thread.sleep(50);
      assertThat(connector.replicas(Stage.DECODE)).isZero();
      connector.scale(Stage.DECODE, 1);
      assertThat(scrapeWhenUp(urls.getFirst()).sum("vllm:num_requests_running")).isEqualTo(24);
    }
  }

  @Test
  void aLaunchFileHoldsOneArgumentALine(@org.junit.jupiter.api.io.TempDir Path dir) throws IOException {
    Path file = dir.resolve("decode.launch");
    java.nio.file.Files.writeString(file, "java\n-Dquarkus.http.port={httpPort}\n\n-Dmoemesh.decode.kv-stores=localhost:9401,localhost:9411\n"
        + "-Dname=decode {index}\n-Dquarkus.grpc.server.port={grpcPort}\n");
    var launch = LocalProcessConnector.Launch.read(file, 9300);
    assertThat(launch.commandFor(2)).containsExactly("java", "-Dquarkus.http.port=9320",
        "-Dmoemesh.decode.kv-stores=localhost:9401,localhost:9411", "-Dname=decode 2", "-Dquarkus.grpc.server.port=9321");
    java.nio.file.Files.writeString(file, "\n \n");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> LocalProcessConnector.Launch.read(file, 9300))
        .isInstanceOf(IOException.class).hasMessageEndingWith("holds no command");
  }

  @Test
  void aStageWithoutALaunchCommandIsAnError() {
    try (var connector = new LocalProcessConnector(Map.of(), Path.of("target", "local-replicas"), Duration.ofSeconds(1))) {
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> connector.scale(Stage.PREFILL, 1))
          .isInstanceOf(ConnectorException.class).hasMessage("prefill: no launch command configured");
    }
  }

  private io.moemesh.planner.observe.Scrape scrapeWhenUp(URI url) throws Exception {
    Instant deadline = Instant.now().plusSeconds(60);
    while (true) {
      try {
        return scraper.scrape(url);
      } catch (IOException e) {
        if (Instant.now().isAfter(deadline)) throw e;
        Thread.sleep(100);
      }
    }
  }

  private boolean answers(URI url) {
    try {
      scraper.scrape(url);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** A port p with p and p + 10 free now (the replicas' ports are base + 10·i). */
  private static int freeBasePort() throws IOException {
    for (int attempt = 0; attempt < 20; attempt++) {
      int p;
      try (var s = new ServerSocket(0)) {
        p = s.getLocalPort();
      }
      if (p + 10 > 65535) continue;
      try (var s = new ServerSocket(p + 10)) {
        if (s.getLocalPort() == p + 10) return p;
      } catch (IOException taken) {
        // try another
      }
    }
    throw new IOException("no two free ports 10 apart");
  }
}
