package io.moemesh.gateway;

import static io.moemesh.gateway.Api.chat;
import static io.moemesh.gateway.Api.newId;
import static io.moemesh.gateway.Api.post;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.Status;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Between the legs the gateway holds the only reference to the prefill's KV object: when no decode replica will
 * load it (the client left, a stop string ended the choice, decode failed before answering) the gateway releases
 * it at once; once decode answered, releasing is decode's job.
 */
@QuarkusTest
@WithTestResource(TestModel.class)
class TicketReleaseTest {
  static final Duration TIMEOUT = Duration.ofSeconds(5);

  @Inject ServedModel model;

  @BeforeEach
  void ready() {
    Api.awaitReady();
  }

  /** The ticket the fake prefill gave the request the client called {@code clientId}: keyed by the mesh's own id. */
  static String ticketOf(String clientId) {
    var prefills = FakeMesh.calls(clientId, "prefill");
    if (prefills.isEmpty()) return "(no prefill yet for " + clientId + ")";
    return FakePrefill.ticketKey(((io.moemesh.proto.prefill.v1.PrefillRequest) prefills.getFirst().request()).getRequestId());
  }

  @Test
  void aClientLeavingBetweenPrefillAndDecodeReleasesTheObject() throws IOException {
    String id = newId("leave-between");
    FakeMesh.script(id, FakeMesh.Script.says("the first token and then nothing").gated(new CompletableFuture<>()));
    String body = chat("hi").put("stream", true).toString();
    try (Socket socket = new Socket("localhost", Api.HTTP_PORT)) {
      socket.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
          + "X-Request-Id: " + id + "\r\nContent-Length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body)
          .getBytes(StandardCharsets.UTF_8));
      socket.setSoTimeout((int) TIMEOUT.toMillis());
      var in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
      String line = in.readLine();
      while (line != null && !(line.startsWith("data: {") && !Api.parse(line.substring(6)).path("choices").path(0)
          .path("delta").path("content").asText().isEmpty())) {
        line = in.readLine();
      }
      assertThat(line).as("the first token's event").isNotNull();
      assertThat(FakeKvStore.RELEASED).as("the first token is out, decode has not answered").doesNotContain(ticketOf(id));
    }
    await().atMost(TIMEOUT).until(() -> FakeKvStore.RELEASED.contains(ticketOf(id)));
    // the decode leg, if the gateway had opened it before the client left, is cancelled with it
    await().atMost(TIMEOUT).until(() -> FakeMesh.calls(id, "decode").stream().allMatch(c -> c.cancelled().get()));
  }

  @Test
  void aStopStringInTheFirstTokenReleasesTheObject() {
    String id = newId("stop-first");
    String text = "Hello there, nothing more.";
    FakeMesh.script(id, FakeMesh.Script.says(text).gated(new CompletableFuture<>()));
    String firstPiece = model.tokenizer().decode(new int[] {model.tokenizer().encode(text)[0]}, true);
    var body = chat("hi");
    body.putArray("stop").add(firstPiece);
    post("/v1/chat/completions", id, body).then().statusCode(200);
    await().atMost(TIMEOUT).until(() -> FakeKvStore.RELEASED.contains(ticketOf(id)));
  }

  @Test
  void aDecodeFailingBeforeItAnswersReleasesTheObject() {
    String id = newId("decode-fails");
    FakeMesh.script(id, FakeMesh.Script.says("never decoded").failing(Status.FAILED_PRECONDITION.withDescription("no")));
    post("/v1/chat/completions", id, chat("hi")).then().statusCode(502);
    await().atMost(TIMEOUT).until(() -> FakeKvStore.RELEASED.contains(ticketOf(id)));
  }

  @Test
  void aRequestDecodeAnsweredLeavesTheReleaseToDecode() {
    String decoded = newId("decoded");
    FakeMesh.script(decoded, FakeMesh.Script.says("A whole answer from decode."));
    post("/v1/chat/completions", decoded, chat("hi")).then().statusCode(200);
    String left = newId("then-left"); // a release sent after the first request's end, as a marker
    FakeMesh.script(left, FakeMesh.Script.says("Stop here.").failing(Status.FAILED_PRECONDITION.withDescription("no")));
    post("/v1/chat/completions", left, chat("hi"));
    await().atMost(TIMEOUT).until(() -> FakeKvStore.RELEASED.contains(ticketOf(left)));
    assertThat(FakeKvStore.RELEASED).doesNotContain(ticketOf(decoded));
  }
}
