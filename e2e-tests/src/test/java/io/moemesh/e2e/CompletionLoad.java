package io.moemesh.e2e;

import static io.moemesh.e2e.DisaggregatedMeshTest.prompt;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Clients of the gateway that each stream one greedy completion after another (random prompts of one length,
 * {@code ignore_eos}), optionally pausing between them; {@link #clients} sets how many run. A request counts as done
 * only with HTTP 200, no error event, finish reason {@code length} and every token asked for in its usage; anything
 * else is a failure, named. Each done request's client-side TTFT is kept with its start.
 */
final class CompletionLoad {
  /** A completed request: when it was sent (ns, {@link System#nanoTime}) and its time to the first token (ms). */
  record Done(long sentNanos, double ttftMs) {}

  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final ObjectMapper JSON = new ObjectMapper();
  final AtomicInteger done = new AtomicInteger();
  final Queue<String> failures = new ConcurrentLinkedQueue<>();
  final Queue<Done> completed = new ConcurrentLinkedQueue<>();
  private final int gatewayPort, promptTokens, maxTokens;
  private final List<AtomicBoolean> running = new ArrayList<>();
  private final List<Thread> threads = new ArrayList<>();

  CompletionLoad(int gatewayPort, int promptTokens, int maxTokens) {
    this.gatewayPort = gatewayPort;
    this.promptTokens = promptTokens;
    this.maxTokens = maxTokens;
  }

  /** The first {@code n} clients run back to back; the others stop after their request in flight. */
  void clients(int n) {
    clients(n, Duration.ZERO);
  }

  /** The first {@code n} clients run (new ones pause {@code pause} after each request); the others stop. */
  synchronized void clients(int n, Duration pause) {
    while (running.size() < n) {
      var on = new AtomicBoolean(true);
      int client = running.size();
      running.add(on);
      threads.add(Thread.ofVirtual().start(() -> {
        for (int i = 0; on.get(); i++) {
          stream(client * 100_000 + i);
          if (!pause.isZero() && on.get()) sleep(pause);
        }
      }));
    }
    for (int i = n; i < running.size(); i++) running.get(i).set(false);
  }

  /** {@code n} requests at once, one a client. */
  synchronized void burst(int n) {
    for (int i = 0; i < n; i++) {
      int seed = 1_000_000 + threads.size();
      threads.add(Thread.ofVirtual().start(() -> stream(seed)));
    }
  }

  void stop() throws InterruptedException {
    synchronized (this) {
      running.forEach(on -> on.set(false));
    }
    for (Thread t : threads) t.join(Duration.ofMinutes(1));
  }

  /** The TTFTs (ms) of the requests sent at or after {@code sinceNanos}, in completion order. */
  List<Double> ttftsSentSince(long sinceNanos) {
    List<Double> ttfts = new ArrayList<>();
    for (Iterator<Done> it = completed.iterator(); it.hasNext(); ) {
      Done d = it.next();
      if (d.sentNanos() - sinceNanos >= 0) ttfts.add(d.ttftMs());
    }
    return ttfts;
  }

  /** The nearest-rank quantile q of the values (NaN for none). */
  static double quantile(List<Double> values, double q) {
    if (values.isEmpty()) return Double.NaN;
    double[] sorted = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return sorted[Math.max(0, (int) Math.ceil(q * sorted.length) - 1)];
  }

  private void stream(int seed) {
    String body = "{\"model\": \"demo\", \"prompt\": " + Arrays.toString(prompt(seed, promptTokens)) + ", \"max_tokens\": " + maxTokens
        + ", \"temperature\": 0, \"ignore_eos\": true, \"stream\": true, \"stream_options\": {\"include_usage\": true}}";
    var request = HttpRequest.newBuilder(URI.create("http://localhost:" + gatewayPort + "/v1/completions"))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
    long sent = System.nanoTime();
    try {
      var response = HTTP.send(request, HttpResponse.BodyHandlers.ofLines());
      String finish = null;
      int completionTokens = -1;
      long firstToken = -1;
      for (Iterator<String> lines = response.body().iterator(); lines.hasNext(); ) {
        String line = lines.next();
        if (!line.startsWith("data: ")) continue;
        String data = line.substring(6);
        if (data.equals("[DONE]")) continue;
        JsonNode json = JSON.readTree(data);
        if (json.has("error")) throw new IOException("error event " + json.get("error"));
        for (JsonNode c : json.path("choices")) {
          if (firstToken < 0 && !c.path("text").asText().isEmpty()) firstToken = System.nanoTime();
          if (c.hasNonNull("finish_reason")) finish = c.get("finish_reason").asText();
        }
        if (json.hasNonNull("usage")) completionTokens = json.get("usage").path("completion_tokens").asInt();
      }
      if (response.statusCode() != 200 || !"length".equals(finish) || completionTokens != maxTokens) {
        throw new IOException("HTTP " + response.statusCode() + ", finish " + finish + ", " + completionTokens + " tokens");
      }
      if (firstToken < 0) firstToken = System.nanoTime(); // every token decoded to no text: the end bounds it
      completed.add(new Done(sent, (firstToken - sent) / 1e6));
      done.incrementAndGet();
    } catch (IOException e) {
      failures.add("request " + seed + ": " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void sleep(Duration pause) {
    try {
      Thread.sleep(pause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
