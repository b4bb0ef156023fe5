package io.moemesh.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Streams one completion from an OpenAI-compatible {@code /v1/completions} and times it as vLLM's
 * {@code benchmarks/serve} does: the prompt as token ids, {@code max_tokens}, {@code ignore_eos} (vLLM's extension:
 * exactly {@code max_tokens} come back), greedy, {@code stream_options.include_usage} for the token counts.
 * Blocking; thread-safe (one {@link HttpClient} for all requests, HTTP/1.1: one connection per stream in flight).
 */
final class ServeClient {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final HttpClient http;
  private final URI endpoint;
  private final String model;
  private final Duration timeout;

  ServeClient(URI endpoint, String model, Duration timeout) {
    this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();
    this.endpoint = endpoint;
    this.model = model;
    this.timeout = timeout;
  }

  /** {@code http://host:port}, {@code …/v1} or {@code …/v1/completions} → the completions endpoint. */
  static URI completionsEndpoint(String url) {
    String u = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
    if (u.endsWith("/v1/completions")) return URI.create(u);
    return URI.create(u.endsWith("/v1") ? u + "/completions" : u + "/v1/completions");
  }

  /** The id of the first model {@code GET /v1/models} lists. */
  static String servedModel(URI completions, Duration timeout) throws IOException, InterruptedException {
    URI models = completions.resolve("models");
    try (HttpClient client = HttpClient.newHttpClient()) {
      HttpResponse<String> r = client.send(HttpRequest.newBuilder(models).timeout(timeout).build(), HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200) throw new IOException("GET " + models + " answered " + r.statusCode() + ": " + r.body());
      JsonNode first = JSON.readTree(r.body()).path("data").path(0).path("id");
      if (!first.isTextual()) throw new IOException("GET " + models + " lists no model: " + r.body());
      return first.asText();
    }
  }

  String requestBody(int[] prompt, int maxTokens) {
    ObjectNode body = JSON.createObjectNode().put("model", model);
    var ids = body.putArray("prompt");
    for (int id : prompt) ids.add(id);
    body.put("max_tokens", maxTokens).put("ignore_eos", true).put("temperature", 0.0).put("stream", true);
    body.putObject("stream_options").put("include_usage", true);
    return body.toString();
  }

  RequestResult complete(int[] prompt, int maxTokens) {
    var request = HttpRequest.newBuilder(endpoint).timeout(timeout).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(requestBody(prompt, maxTokens))).build();
    long start = System.nanoTime();
    try {
      HttpResponse<Stream<String>> response = http.send(request, HttpResponse.BodyHandlers.ofLines());
      try (Stream<String> lines = response.body()) {
        if (response.statusCode() != 200) {
          return RequestResult.failed(prompt.length, "HTTP " + response.statusCode() + ": " + lines.collect(Collectors.joining(" ")),
              seconds(start, System.nanoTime()));
        }
        var recorder = new Recorder(start, prompt.length);
        var parser = new SseParser();
        Iterator<String> it = lines.iterator();
        while (it.hasNext()) { // to the end, so the connection can be reused
          String line = it.next();
          long now = System.nanoTime();
          parser.accept(line).ifPresent(data -> recorder.event(data, now));
        }
        parser.finish().ifPresent(data -> recorder.event(data, System.nanoTime()));
        return recorder.result(System.nanoTime());
      }
    } catch (IOException | UncheckedIOException e) {
      return RequestResult.failed(prompt.length, e.toString(), seconds(start, System.nanoTime()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return RequestResult.failed(prompt.length, "interrupted", seconds(start, System.nanoTime()));
    }
  }

  /** One stream's events → a {@link RequestResult}; times are {@link System#nanoTime()} readings. */
  static final class Recorder {
    private final long start;
    private int promptTokens;
    private int outputTokens = -1, textChunks;
    private long firstText, lastText;
    private final List<Double> itl = new ArrayList<>();
    private String error;
    private long doneAt;

    Recorder(long start, int promptTokens) {
      this.start = start;
      this.promptTokens = promptTokens;
    }

    void event(String data, long now) {
      if (data.equals("[DONE]")) {
        doneAt = now;
        return;
      }
      JsonNode chunk;
      try {
        chunk = JSON.readTree(data);
      } catch (JsonProcessingException e) {
        error = "not JSON: " + data;
        return;
      }
      if (chunk.hasNonNull("error")) {
        error = "error event: " + chunk.get("error").path("message").asText(chunk.get("error").toString());
        return;
      }
      JsonNode text = chunk.path("choices").path(0).path("text");
      if (text.isTextual() && !text.asText().isEmpty()) {
        if (textChunks == 0) firstText = now;
        else itl.add(seconds(lastText, now));
        lastText = now;
        textChunks++;
      }
      JsonNode usage = chunk.path("usage");
      if (usage.isObject()) {
        outputTokens = usage.path("completion_tokens").asInt(outputTokens);
        promptTokens = usage.path("prompt_tokens").asInt(promptTokens);
      }
    }

    /** {@code end}: when the stream closed; the latency ends at {@code [DONE]} if it came. */
    RequestResult result(long end) {
      double latency = seconds(start, doneAt != 0 ? doneAt : end);
      if (error != null) return RequestResult.failed(promptTokens, error, latency);
      if (doneAt == 0) return RequestResult.failed(promptTokens, "the stream ended without [DONE]", latency);
      if (textChunks == 0) return RequestResult.failed(promptTokens, "no chunk carried text", latency);
      int tokens = outputTokens >= 0 ? outputTokens : textChunks;
      return new RequestResult(true, null, promptTokens, tokens, seconds(start, firstText), List.copyOf(itl), latency);
    }
  }

  static double seconds(long fromNanos, long toNanos) {
    return (toNanos - fromNanos) / 1e9;
  }
}
