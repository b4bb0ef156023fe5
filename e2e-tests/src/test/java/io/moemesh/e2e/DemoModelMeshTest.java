package io.moemesh.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The shipped demo model ({@code models/demo}) served as {@code up} serves it, disaggregated: a chat request gets a
 * readable story — words of the corpus the model was trained on, sentences, a natural stop — not noise.
 */
class DemoModelMeshTest {
  static final Path MODEL = ServiceProcess.ROOT.resolve("models/demo");
  static ServiceProcess kvStore, prefill, decode, gateway;

  @BeforeAll
  static void startMesh() throws Exception {
    kvStore = ServiceProcess.start("kv-store", "demo-kv-store", List.of("moemesh.kv-store.max-bytes=64M"));
    List<String> engine = List.of("moemesh.engine.model-dir=" + MODEL.toAbsolutePath(), "moemesh.engine.kv-cache-memory=32M",
        "moemesh.engine.threads=1");
    prefill = ServiceProcess.start("prefill-svc", "demo-prefill", with(engine, "moemesh.prefill.kv-store=" + kvStore.grpcAddress()));
    decode = ServiceProcess.start("decode-svc", "demo-decode", engine);
    gateway = ServiceProcess.start("gateway", "demo-gateway", List.of("moemesh.gateway.model-dir=" + MODEL.toAbsolutePath(),
        "moemesh.gateway.prefill.replicas=" + prefill.grpcAddress(), "moemesh.gateway.decode.replicas=" + decode.grpcAddress()));
    for (ServiceProcess p : List.of(kvStore, prefill, decode, gateway)) p.awaitReady(DisaggregatedMeshTest.READY);
  }

  @AfterAll
  static void stopMesh() throws InterruptedException {
    for (ServiceProcess p : new ServiceProcess[] {gateway, decode, prefill, kvStore}) if (p != null) p.close();
  }

  static List<String> with(List<String> base, String... more) {
    return java.util.stream.Stream.concat(base.stream(), Arrays.stream(more)).toList();
  }

  @Test
  void aChatRequestGetsAReadableStory() throws Exception {
    String body = "{\"model\": \"demo\", \"messages\": [{\"role\": \"user\", \"content\": \"Tell me a story about a fox\"}],"
        + " \"max_tokens\": 160, \"temperature\": 0}";
    var response = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://localhost:" + gateway.httpPort + "/v1/chat/completions"))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    JsonNode choice = new ObjectMapper().readTree(response.body()).at("/choices/0");
    String story = choice.at("/message/content").asText();
    assertThat(choice.path("finish_reason").asText()).as(story).isEqualTo("stop");
    List<String> words = words(story);
    Set<String> known = Set.copyOf(words(Files.readString(MODEL.resolve("heldout.txt")) + Files.readString(MODEL.resolve("heldout-chat.jsonl"))));
    assertThat(words).as(story).hasSizeGreaterThan(20);
    assertThat(words.stream().filter(known::contains).count()).as("words of the training corpus: %s", story)
        .isGreaterThanOrEqualTo(words.size() * 9L / 10);
    assertThat(story).as("sentences").matches("(?s)[A-Z].*[.!?\"]\\s*");
  }

  static List<String> words(String text) {
    return Arrays.stream(text.toLowerCase(Locale.ROOT).split("[^a-z']+")).filter(w -> !w.isEmpty()).collect(Collectors.toList());
  }
}
