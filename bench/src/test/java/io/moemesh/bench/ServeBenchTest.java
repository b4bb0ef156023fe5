package io.moemesh.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** bench serve without a model: SSE parsing, the statistics, the options, and the client against a scripted server. */
class ServeBenchTest {
  static {
    // The JDK's test server writes a chunk's header, data and end separately: without TCP_NODELAY, Nagle's algorithm
    // and delayed ACKs hold a chunk back ~40 ms and the measured gaps would be the server's, not the script's.
    System.setProperty("sun.net.httpserver.nodelay", "true");
  }

  @Nested
  class Sse {
    private final SseParser parser = new SseParser();

    private List<String> feed(String... lines) {
      List<String> events = new ArrayList<>();
      for (String line : lines) parser.accept(line).ifPresent(events::add);
      parser.finish().ifPresent(events::add);
      return events;
    }

    @Test
    void aBlankLineEndsEachEvent() {
      assertThat(feed("data: {\"a\":1}", "", "data: [DONE]", "")).containsExactly("{\"a\":1}", "[DONE]");
    }

    @Test
    void dataLinesOfOneEventJoinWithNewlines() {
      assertThat(feed("data: one", "data:two", "data:", "")).containsExactly("one\ntwo\n");
    }

    @Test
    void commentsOtherFieldsAndEventsWithoutDataAreSkipped() {
      assertThat(feed(": keep-alive", "", "event: ping", "id: 7", "retry: 10", "", "data: x", "")).containsExactly("x");
    }

    @Test
    void onlyOneSpaceAfterTheColonIsDropped() {
      assertThat(feed("data:  two spaces", "")).containsExactly(" two spaces");
    }

    @Test
    void anEventCutOffByTheEndOfTheStreamIsKept() {
      assertThat(feed("data: {\"usage\":{}}")).containsExactly("{\"usage\":{}}");
      assertThat(parser.finish()).isEqualTo(Optional.empty());
    }
  }

  @Nested
  class Statistics {
    @Test
    void percentilesInterpolateLinearlyLikeNumpy() {
      double[] sorted = {1, 2, 3, 4};
      assertThat(ServeStats.percentile(sorted, 50)).isEqualTo(2.5); // np.percentile([1,2,3,4], 50)
      assertThat(ServeStats.percentile(sorted, 90)).isCloseTo(3.7, within(1e-12));
      assertThat(ServeStats.percentile(sorted, 99)).isCloseTo(3.97, within(1e-12));
      assertThat(ServeStats.percentile(new double[] {5}, 99)).isEqualTo(5);
      assertThat(ServeStats.percentile(new double[0], 50)).isNaN();
    }

    @Test
    void figuresPerRequestAndThroughputsOverTheRun() {
      var a = new RequestResult(true, null, 100, 11, 0.5, List.of(0.1, 0.1, 0.3), 1.5); // TPOT (1.5 - 0.5) / 10 = 0.1
      var b = new RequestResult(true, null, 100, 5, 1.0, List.of(0.2), 3.0);            // TPOT (3.0 - 1.0) / 4  = 0.5
      var one = new RequestResult(true, null, 100, 1, 0.7, List.of(), 0.7);            // no TPOT
      var failed = RequestResult.failed(100, "HTTP 503", 0.1);
      ServeStats s = ServeStats.of(List.of(a, b, one, failed), 4.0);

      assertThat(s.completed()).isEqualTo(3);
      assertThat(s.failed()).isEqualTo(1);
      assertThat(s.totalInputTokens()).isEqualTo(300);
      assertThat(s.totalOutputTokens()).isEqualTo(17);
      assertThat(s.requestThroughput()).isEqualTo(0.75);
      assertThat(s.outputThroughput()).isEqualTo(17 / 4.0);
      assertThat(s.totalTokenThroughput()).isEqualTo(317 / 4.0);
      assertThat(s.ttft().count()).isEqualTo(3);
      assertThat(s.ttft().mean()).isCloseTo((0.5 + 1.0 + 0.7) / 3, within(1e-12));
      assertThat(s.ttft().p50()).isEqualTo(0.7);
      assertThat(s.tpot().count()).isEqualTo(2);
      assertThat(s.tpot().mean()).isCloseTo(0.3, within(1e-12));
      assertThat(s.tpot().p90()).isCloseTo(0.1 + 0.9 * 0.4, within(1e-12));
      assertThat(s.itl().count()).isEqualTo(4);
      assertThat(s.itl().p50()).isCloseTo(0.15, within(1e-12)); // 0.1 0.1 0.2 0.3
      assertThat(s.e2el().p99()).isCloseTo(1.5 + 0.98 * 1.5, within(1e-12)); // 0.7 1.5 3.0
    }

    @Test
    void aRunWithoutSuccessHasNoFigures() {
      ServeStats s = ServeStats.of(List.of(RequestResult.failed(10, "refused", 0.01)), 1.0);
      assertThat(s.completed()).isZero();
      assertThat(s.ttft().mean()).isNaN();
      assertThat(s.tpot().count()).isZero();
    }
  }

  @Nested
  class Options {
    @Test
    void defaultsAndEndpoint() {
      var o = ServeOptions.parse("--url", "http://localhost:8000");
      assertThat(o.endpoint()).isEqualTo(URI.create("http://localhost:8000/v1/completions"));
      assertThat(List.of(o.concurrency(), o.numPrompts(), o.inputLen(), o.outputLen(), o.warmup())).containsExactly(1, 64, 1024, 128, 1);
      assertThat(ServeOptions.parse("--url=http://h:1/v1/", "--concurrency=8").endpoint()).isEqualTo(URI.create("http://h:1/v1/completions"));
      assertThat(ServeOptions.parse("--url", "http://h:1/v1/completions", "--concurrency", "8").warmup()).isEqualTo(8);
    }

    @Test
    void everyOption() {
      var o = ServeOptions.parse("--url", "http://h:1", "--concurrency", "4", "--num-prompts", "10", "--input-len", "2000",
          "--output-len", "16", "--json", "out/s.json", "--model-name", "small", "--tokenizer", "/m", "--seed", "3", "--warmup", "0",
          "--prefix-len", "512");
      assertThat(o).isEqualTo(new ServeOptions(URI.create("http://h:1/v1/completions"), 4, 10, 2000, 512, 16, Path.of("out/s.json"),
          "small", Path.of("/m"), 3, 0, List.of(), new Load.ClosedLoop(), Slos.NONE, null, null, 5));
      assertThat(o.chartFile()).isEqualTo(Path.of("out/s.png"));
      assertThat(ServeOptions.parse("--url", "u", "--spec-metrics", "http://a:9300, http://b:9310/q/metrics").specMetrics())
          .containsExactly(URI.create("http://a:9300"), URI.create("http://b:9310/q/metrics"));
      assertThat(ServeOptions.parse("--url", "u").prefixLen()).isZero();
    }

    @Test
    void rejectsBadInput() {
      assertThatThrownBy(() -> ServeOptions.parse("--concurrency", "2")).hasMessage("Missing required option: '--url=URL'");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--concurrency", "0")).hasMessage("--concurrency must be at least 1, got 0");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--input-len", "x")).hasMessageContaining("'x'");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--rate", "3")).hasMessageContaining("--rate");
      assertThatThrownBy(() -> ServeOptions.parse("--url")).hasMessage("Missing required parameter for option '--url' (URL)");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--prefix-len", "-1")).hasMessage("--prefix-len must not be negative, got -1");
    }
  }

  @Nested
  class Prompts {
    @Test
    void exactLengthFromTheGivenIdsAndRepeatableBySeed() {
      int[] ids = {5, 9, 42};
      List<int[]> prompts = RandomPrompts.draw(ids, 3, 50, 7);
      assertThat(prompts).hasSize(3).allSatisfy(p -> assertThat(p).hasSize(50).containsOnly(5, 9, 42));
      assertThat(RandomPrompts.draw(ids, 3, 50, 7)).usingRecursiveComparison().isEqualTo(prompts);
      assertThat(RandomPrompts.draw(ids, 1, 50, 8).getFirst()).isNotEqualTo(prompts.getFirst());
    }

    @Test
    void aSharedPrefixGoesBeforeEachPromptsOwnIds() {
      List<int[]> prompts = RandomPrompts.withPrefix(new int[] {1, 2}, List.of(new int[] {7, 8, 9}, new int[] {5}));
      assertThat(prompts).containsExactly(new int[] {1, 2, 7, 8, 9}, new int[] {1, 2, 5});
    }
  }

  /** The client against a local HTTP server that plays scripted SSE streams, with pauses between chunks. */
  @Nested
  class Client {
    private HttpServer server;
    private final List<String> bodies = Collections.synchronizedList(new ArrayList<>());
    private final AtomicInteger inFlight = new AtomicInteger(), maxInFlight = new AtomicInteger();

    private ServeClient start(int status, String... events) throws IOException {
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
      server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
      server.createContext("/v1/completions", exchange -> {
        maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
        bodies.add(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
        exchange.getResponseHeaders().add("Content-Type", status == 200 ? "text/event-stream" : "application/json");
        exchange.sendResponseHeaders(status, 0);
        try (OutputStream out = exchange.getResponseBody()) {
          for (String e : events) {
            if (e.startsWith("sleep ")) {
              sleep(Long.parseLong(e.substring(6)));
              continue;
            }
            out.write(e.getBytes(StandardCharsets.UTF_8));
            out.flush();
          }
        } finally {
          inFlight.decrementAndGet();
        }
      });
      server.start();
      URI endpoint = ServeClient.completionsEndpoint("http://127.0.0.1:" + server.getAddress().getPort());
      return new ServeClient(endpoint, "small", Duration.ofSeconds(20));
    }

    @AfterEach
    void stop() {
      if (server != null) server.stop(0);
    }

    private static String chunk(String text) {
      return "data: {\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"" + text + "\",\"finish_reason\":null}],\"usage\":null}\n\n";
    }

    private static final String FINISH = "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}],\"usage\":null}\n\n";
    private static final String USAGE = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}}\n\n";
    private static final String DONE = "data: [DONE]\n\n";

    @Test
    void timesTheFirstTextAndTheGapsAndCountsTokensFromUsage() throws Exception {
      ServeClient client = start(200, "sleep 150", chunk("a"), "sleep 100", chunk("b"), chunk(""), "sleep 100", chunk("cd"),
          FINISH, USAGE, DONE);
      client.complete(new int[] {7, 8, 9}, 4); // warm-up: a cold JVM's first stream is read late (class loading, JIT)
      RequestResult r = client.complete(new int[] {7, 8, 9}, 4);

      assertThat(r.ok()).as(r.error()).isTrue();
      assertThat(r.promptTokens()).isEqualTo(3);
      assertThat(r.outputTokens()).isEqualTo(4);
      assertThat(r.ttftSeconds()).isBetween(0.14, 2.0);
      assertThat(r.itlSeconds()).hasSize(2).allSatisfy(gap -> assertThat(gap).isBetween(0.09, 2.0));
      assertThat(r.latencySeconds()).isGreaterThanOrEqualTo(r.ttftSeconds() + 0.19);
      JsonNode sent = new ObjectMapper().readTree(bodies.getFirst());
      assertThat(sent.path("model").asText()).isEqualTo("small");
      assertThat(sent.path("prompt").toString()).isEqualTo("[7,8,9]");
      assertThat(sent.path("max_tokens").asInt()).isEqualTo(4);
      assertThat(sent.path("ignore_eos").asBoolean()).isTrue();
      assertThat(sent.path("stream").asBoolean()).isTrue();
      assertThat(sent.path("stream_options").path("include_usage").asBoolean()).isTrue();
      assertThat(sent.path("temperature").asDouble()).isZero();
    }

    @Test
    void withoutUsageEveryTextChunkCountsAsAToken() throws Exception {
      RequestResult r = start(200, chunk("a"), chunk("b"), FINISH, DONE).complete(new int[] {1}, 2);
      assertThat(r.ok()).isTrue();
      assertThat(r.outputTokens()).isEqualTo(2);
      assertThat(r.promptTokens()).isEqualTo(1);
    }

    @Test
    void httpErrorsErrorEventsAndCutStreamsFail() throws Exception {
      RequestResult refused = start(429, "{\"error\":{\"message\":\"saturated\"}}").complete(new int[] {1}, 2);
      assertThat(refused.ok()).isFalse();
      assertThat(refused.error()).contains("HTTP 429").contains("saturated");
      stop();
      RequestResult midStream = start(200, chunk("a"), "data: {\"error\":{\"message\":\"decode replica lost\"}}\n\n")
          .complete(new int[] {1}, 2);
      assertThat(midStream.ok()).isFalse();
      assertThat(midStream.error()).contains("decode replica lost");
      stop();
      RequestResult cut = start(200, chunk("a")).complete(new int[] {1}, 2);
      assertThat(cut.ok()).isFalse();
      assertThat(cut.error()).contains("without [DONE]");
    }

    @Test
    void keepsTheConcurrencyAndReturnsResultsInPromptOrder() throws Exception {
      ServeClient client = start(200, "sleep 50", chunk("a"), USAGE, DONE);
      List<int[]> prompts = RandomPrompts.draw(new int[] {1, 2, 3}, 12, 3, 0);
      List<RequestResult> results = ServeBench.sendAll(client, prompts, 4, 3, null);
      assertThat(results).hasSize(12).allMatch(RequestResult::ok);
      assertThat(maxInFlight.get()).isEqualTo(3);
      assertThat(bodies).hasSize(12);
    }

    @Test
    void theReportAndTheJsonCarryEveryFigure(@TempDir Path dir) throws Exception {
      ServeClient client = start(200, chunk("a"), "sleep 20", chunk("b"), USAGE, DONE);
      var o = ServeOptions.parse("--url", "http://127.0.0.1:" + server.getAddress().getPort(), "--num-prompts", "4",
          "--input-len", "3", "--output-len", "4", "--concurrency", "2");
      ServeBench.Result run = ServeBench.run(o, client, new int[] {1, 2}, new Progress());
      ServeStats stats = ServeStats.of(run.results(), run.durationSeconds());
      assertThat(stats.completed()).isEqualTo(4);
      assertThat(bodies).hasSize(6); // 2 warm-up requests, then 4

      String table = ServeReport.table(o, "small", stats);
      assertThat(table).contains("successful requests", "output token throughput (tok/s)", "TTFT", "TPOT", "ITL", "E2EL");
      Path file = dir.resolve("out/serve.json");
      ServeReport.writeJson(file, ServeReport.json(o, "small", stats, List.of()));
      JsonNode json = new ObjectMapper().readTree(Files.readString(file));
      assertThat(json.path("completed").asInt()).isEqualTo(4);
      assertThat(json.path("total_output_tokens").asInt()).isEqualTo(16);
      for (String figure : List.of("ttft", "tpot", "itl", "e2el"))
        for (String stat : List.of("mean", "median", "p90", "p99"))
          assertThat(json.path(stat + "_" + figure + "_ms").isNumber()).as(stat + "_" + figure + "_ms").isTrue();
      assertThat(json.path("request_throughput").asDouble()).isPositive();
      assertThat(json.path("max_concurrency").asInt()).isEqualTo(2);
    }

    /**
     * With {@code --spec-metrics}, the decode replicas' spec-decode counters are read right before and right after the
     * measured requests (not around the warm-up): the report has their growth, summed over the replicas.
     */
    @Test
    void theDraftAcceptanceIsWhatTheReplicasCountedDuringTheMeasuredRequests() throws Exception {
      ServeClient client = start(200, chunk("a"), USAGE, DONE);
      AtomicInteger scrapes = new AtomicInteger();
      server.createContext("/q/metrics", exchange -> {
        int n = scrapes.incrementAndGet(); // the measured requests run between scrapes 1 and 2 (per replica: this one twice)
        String body = "# TYPE vllm:spec_decode_num_drafts_total counter\n"
            + "vllm:spec_decode_num_drafts_total " + (n <= 2 ? 10 : 16) + ".0\n"
            + "vllm:spec_decode_num_draft_tokens_total " + (n <= 2 ? 20 : 32) + ".0 # {trace_id=\"7\"} 99.0\n"
            + "vllm:spec_decode_num_accepted_tokens_total " + (n <= 2 ? 5 : 14) + ".0\n"
            + "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"} 1000.0\n";
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(200, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(bytes);
        }
      });
      String base = "http://127.0.0.1:" + server.getAddress().getPort();
      var o = ServeOptions.parse("--url", base, "--num-prompts", "2", "--input-len", "3", "--output-len", "2",
          "--spec-metrics", base + "," + base + "/q/metrics"); // the same replica twice: its growth counts twice
      ServeBench.Result run = ServeBench.run(o, client, new int[] {1, 2}, new Progress());
      assertThat(scrapes.get()).isEqualTo(4);
      assertThat(run.speculation()).isEqualTo(new SpecDecodeCounts(12, 24, 18));
      assertThat(run.speculation().acceptanceRate()).isEqualTo(0.75);
      assertThat(run.speculation().meanAcceptanceLength()).isEqualTo(2.5);
      ServeStats stats = ServeStats.of(run.results(), run.durationSeconds());
      assertThat(ServeReport.table(o, "small", stats, run.speculation()).lines().filter(l -> l.startsWith("spec decode acceptance rate")))
          .singleElement().asString().endsWith(" 0.750");
      assertThat(ServeReport.json(o, "small", stats, List.of(), run.speculation()).path("spec_decode_acceptance_length").asDouble()).isEqualTo(2.5);
      assertThat(ServeReport.table(o, "small", stats)).doesNotContain("spec decode");
    }

    private static void sleep(long millis) {
      try {
        Thread.sleep(millis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
