package io.moemesh.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * bench serve's open loop end to end against a local HTTP server (as ServeBenchTest's client tests): each stream
 * waits 40 ms before its first chunk, and a planner endpoint reports one more decode replica after a few scrapes.
 */
class ServeOpenLoopTest {
  static {
    System.setProperty("sun.net.httpserver.nodelay", "true"); // see ServeBenchTest
  }

  private HttpServer server;
  private String base;
  private final AtomicInteger completions = new AtomicInteger(), scrapes = new AtomicInteger();

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
    server.createContext("/v1/completions", exchange -> {
      exchange.getRequestBody().readAllBytes();
      completions.incrementAndGet();
      exchange.getResponseHeaders().add("Content-Type", "text/event-stream");
      exchange.sendResponseHeaders(200, 0);
      try (OutputStream out = exchange.getResponseBody()) {
        Thread.sleep(40);
        for (String e : List.of("data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n", "data: {\"choices\":[{\"index\":0,\"text\":\"b\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n", "data: [DONE]\n\n")) {
          out.write(e.getBytes(StandardCharsets.UTF_8));
          out.flush();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    server.createContext("/q/metrics", exchange -> {
      int n = scrapes.incrementAndGet();
      byte[] body = ("moemesh_planner_replicas{stage=\"decode\",kind=\"desired\"} 2\n"
          + "moemesh_planner_replicas{stage=\"decode\",kind=\"actual\"} " + (n < 2 ? 1 : 2) + "\n").getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    server.start();
    base = "http://127.0.0.1:" + server.getAddress().getPort();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  private ServeClient client() {
    return new ServeClient(ServeClient.completionsEndpoint(base), "small", Duration.ofSeconds(20));
  }

  @Test
  void aPoissonRunSendsOnScheduleAndCountsGoodputUnderItsSlos(@TempDir Path dir) throws Exception {
    var o = ServeOptions.parse("--url", base, "--request-rate", "25", "--num-prompts", "12", "--input-len", "3", "--output-len", "2",
        "--goodput", "ttft:10000", "e2el:20000", "--json", dir.resolve("rate.json").toString());
    ServeBench.Result run = ServeBench.run(o, client(), new int[] {1, 2}, new Progress());
    assertThat(completions.get()).isEqualTo(13); // 1 warm-up request, then 12
    ArrivalSchedule schedule = run.schedule();
    for (int i = 0; i < 12; i++) assertThat(run.requests().get(i).sentSeconds()).isGreaterThanOrEqualTo(schedule.sendSeconds(i));
    ServeStats stats = ServeBench.report(o, "small", run, new Progress());
    assertThat(stats.completed()).isEqualTo(12);
    assertThat(stats.good()).isEqualTo(12);

    JsonNode json = new ObjectMapper().readTree(Files.readString(dir.resolve("rate.json")));
    assertThat(json.path("request_rate").asText()).isEqualTo("25.0");
    assertThat(json.path("max_concurrency").isNull()).isTrue();
    assertThat(json.path("good_requests").asInt()).isEqualTo(12);
    assertThat(json.path("request_goodput").asDouble()).isEqualTo(json.path("request_throughput").asDouble());
    assertThat(json.path("goodput_slos_ms").path("ttft").asDouble()).isEqualTo(10000);
    assertThat(json.path("timeline").size()).isPositive();
    assertThat(ImageIO.read(dir.resolve("rate.png").toFile()).getWidth()).isEqualTo(ServeCharts.WIDTH);
  }

  /** Every stream waits 40 ms before its first text: no request meets a 1 ms TTFT bound, every one a 10 s bound. */
  @Test
  void aRequestOverItsBoundIsNotGood() throws Exception {
    var o = ServeOptions.parse("--url", base, "--request-rate", "inf", "--num-prompts", "6", "--input-len", "3", "--output-len", "2",
        "--goodput", "ttft:1", "--max-concurrency", "2", "--warmup", "0");
    ServeBench.Result run = ServeBench.run(o, client(), new int[] {1, 2}, new Progress());
    ServeStats stats = ServeStats.of(run.results(), run.durationSeconds(), o.slos());
    assertThat(stats.completed()).isEqualTo(6);
    assertThat(stats.good()).isZero();
    assertThat(stats.requestGoodput()).isZero();
    // 2 slots for 6 requests sent at once: three waves of 40+ ms, each request timed from its slot
    assertThat(run.durationSeconds()).isGreaterThanOrEqualTo(0.12);
    assertThat(stats.ttft().p99()).isLessThan(run.durationSeconds());
  }

  @Test
  void aRampReportsItsPhasesAndThePlannersReplicas(@TempDir Path dir) throws Exception {
    var o = ServeOptions.parse("--url", base, "--ramp", "20:0.6,0:0.8,20:0.6", "--input-len", "3", "--output-len", "2", "--seed", "4",
        "--planner-metrics", base, "--json", dir.resolve("ramp.json").toString(), "--window", "0.5");
    ServeBench.Result run = ServeBench.run(o, client(), new int[] {1, 2}, new Progress());
    assertThat(run.requests()).hasSize(run.schedule().size()).allMatch(r -> r.result().ok());
    assertThat(run.requests()).noneMatch(r -> r.phase() == 1);
    assertThat(run.replicas()).extracting(PlannerReplicas.Sample::stage).containsOnly("decode");
    assertThat(run.replicas()).filteredOn(s -> s.kind().equals("actual")).extracting(PlannerReplicas.Sample::replicas).contains(1.0, 2.0);

    ServeBench.report(o, "small", run, new Progress());
    JsonNode json = new ObjectMapper().readTree(Files.readString(dir.resolve("ramp.json")));
    assertThat(json.path("ramp").size()).isEqualTo(3);
    assertThat(json.path("phases").size()).isEqualTo(3);
    assertThat(json.path("phases").path(1).path("sent").asInt()).isZero();
    assertThat(json.path("phases").path(0).path("sent").asInt() + json.path("phases").path(2).path("sent").asInt())
        .isEqualTo(run.schedule().size());
    assertThat(json.path("planner_replicas").size()).isEqualTo(run.replicas().size());
    var image = ImageIO.read(dir.resolve("ramp.png").toFile());
    assertThat(image.getHeight()).isEqualTo(ServeCharts.height(true));
    assertThat(ServeReport.phaseTable(run.timeline(o)).lines().filter(l -> l.matches("^[123] .*"))).hasSize(3);
  }
}
