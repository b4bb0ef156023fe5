package io.moemesh.gateway;

import static io.moemesh.gateway.Api.chat;
import static io.moemesh.gateway.Api.newId;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A stream's life on the wire, read incrementally from a raw socket: the prefill's first token reaches the client
 * before decode starts, a client that hangs up cancels the open gRPC call (prefill or decode), and concurrent
 * streams never mix.
 */
@QuarkusTest
@WithTestResource(TestModel.class)
class StreamingLifecycleTest {
  static final Duration TIMEOUT = Duration.ofSeconds(5);

  @Inject ServedModel model;

  @BeforeEach
  void ready() {
    Api.awaitReady();
  }

  @Test
  void firstTokenReachesTheClientBeforeDecodeStarts() throws IOException {
    String text = "Streaming words arrive one by one.";
    String id = newId("pd-first");
    CompletableFuture<Void> gate = new CompletableFuture<>();
    FakeMesh.script(id, FakeMesh.Script.says(text).gated(gate));
    try (Socket socket = open(id, chat("hi").put("stream", true).toString())) {
      BufferedReader in = reader(socket);
      String first = nextContent(in);
      String firstToken = model.tokenizer().decode(new int[] {model.tokenizer().encode(text)[0]}, true);
      assertThat(first).isEqualTo(firstToken);
      assertThat(FakeMesh.calls(id, "decode")).noneMatch(c -> c.decodeStarted().get());
      gate.complete(null);
      StringBuilder rest = new StringBuilder(first);
      for (String piece = nextContent(in); piece != null; piece = nextContent(in)) rest.append(piece);
      assertThat(rest.toString()).isEqualTo(text);
    }
  }

  @Test
  void aStreamsHeadersGoOutAtOnceAndKeepAlivesWhileThePromptIsComputed() throws IOException {
    String id = newId("keep-alive");
    FakeMesh.script(id, FakeMesh.Script.says("never sent").hangingInPrefill());
    try (Socket socket = open(id, chat("hi").put("stream", true).toString())) {
      BufferedReader in = reader(socket);
      assertThat(in.readLine()).isEqualTo("HTTP/1.1 200 OK");
      List<String> headers = new ArrayList<>();
      for (String line = in.readLine(); !line.isEmpty(); line = in.readLine()) headers.add(line.toLowerCase(java.util.Locale.ROOT));
      assertThat(headers).contains("content-type: text/event-stream", "x-request-id: " + id.toLowerCase(java.util.Locale.ROOT));
      long start = System.nanoTime();
      int comments = 0;
      for (String line = in.readLine(); comments < 2 && line != null; line = in.readLine()) {
        assertThat(line).doesNotStartWith("data:");
        if (line.equals(": keep-alive")) comments++;
      }
      assertThat(comments).isEqualTo(2);
      assertThat(Duration.ofNanos(System.nanoTime() - start)).as("every 1 s (the tests' setting)").isLessThan(Duration.ofSeconds(10));
    }
  }

  @Test
  void hangingUpDuringDecodeCancelsTheDecodeCall() throws IOException {
    String id = newId("cancel-decode");
    FakeMesh.script(id, FakeMesh.Script.says("a stream that never ends by itself").hanging());
    try (Socket socket = open(id, chat("hi").put("stream", true).toString())) {
      assertThat(nextContent(reader(socket))).isNotEmpty();
      await().atMost(TIMEOUT).until(() -> !FakeMesh.calls(id, "decode").isEmpty());
      assertThat(FakeMesh.calls(id, "decode").getFirst().cancelled()).isFalse();
    }
    await().atMost(TIMEOUT).until(() -> FakeMesh.calls(id, "decode").getFirst().cancelled().get());
  }

  @Test
  void hangingUpDuringPrefillCancelsThePrefillCall() throws IOException {
    String id = newId("cancel-prefill");
    FakeMesh.script(id, FakeMesh.Script.says("never sent").hangingInPrefill());
    Socket socket = open(id, chat("hi").toString());
    try {
      await().atMost(TIMEOUT).until(() -> !FakeMesh.calls(id, "prefill").isEmpty());
    } finally {
      socket.close();
    }
    await().atMost(TIMEOUT).until(() -> FakeMesh.calls(id, "prefill").getFirst().cancelled().get());
    assertThat(FakeMesh.calls(id, "decode")).isEmpty();
  }

  @Test
  void concurrentStreamsEachGetTheirOwnTokens() {
    HttpClient client = HttpClient.newHttpClient();
    List<CompletableFuture<Void>> done = new ArrayList<>();
    for (int i = 0; i < 24; i++) {
      String id = newId("concurrent-" + i);
      String text = "Reply number " + i + " belongs to request " + i + " only.";
      FakeMesh.script(id, FakeMesh.Script.says(text));
      HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + Api.HTTP_PORT + "/v1/chat/completions"))
          .header("Content-Type", "application/json").header("X-Request-Id", id)
          .POST(HttpRequest.BodyPublishers.ofString(chat("hi").put("stream", i % 2 == 0).toString())).build();
      boolean stream = i % 2 == 0;
      done.add(client.sendAsync(request, HttpResponse.BodyHandlers.ofString()).thenAccept(response -> {
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("X-Request-Id")).contains(id);
        String content = stream ? Api.streamedText(Api.events(response.body()), 0)
            : Api.parse(response.body()).path("choices").get(0).path("message").path("content").asText();
        assertThat(content).isEqualTo(text);
      }));
    }
    CompletableFuture.allOf(done.toArray(CompletableFuture[]::new)).orTimeout(30, TimeUnit.SECONDS).join();
  }

  private static Socket open(String requestId, String body) throws IOException {
    Socket socket = new Socket("localhost", Api.HTTP_PORT);
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    OutputStream out = socket.getOutputStream();
    out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        + "X-Request-Id: " + requestId + "\r\nContent-Length: " + bytes.length + "\r\n\r\n")
        .getBytes(StandardCharsets.US_ASCII));
    out.write(bytes);
    out.flush();
    socket.setSoTimeout((int) TIMEOUT.toMillis());
    return socket;
  }

  private static BufferedReader reader(Socket socket) throws IOException {
    return new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
  }

  /** The next non-empty delta.content of the stream, or null at {@code [DONE]}. (Chunk-size lines are skipped.) */
  private static String nextContent(BufferedReader in) throws IOException {
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      if (!line.startsWith("data: ")) continue;
      String data = line.substring("data: ".length());
      if (data.equals("[DONE]")) return null;
      JsonNode content = Api.parse(data).path("choices").path(0).path("delta").path("content");
      if (content.isTextual() && !content.asText().isEmpty()) return content.asText();
    }
    return null;
  }
}
