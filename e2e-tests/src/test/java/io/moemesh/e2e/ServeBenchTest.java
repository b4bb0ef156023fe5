package io.moemesh.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moemesh.bench.BenchCommand;
import io.moemesh.model.demo.DemoCheckpoint;
import io.moemesh.tokenizer.TokenizerFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bin/moemesh bench serve} against a real gateway, in the shape of {@code bin/moemesh up --single} (one decode
 * process that computes the prompts itself) on the tiny model: every request comes back with exactly the prompt
 * and output token counts asked for (token-id prompts, {@code ignore_eos}), as the gateway's usage reports them.
 */
class ServeBenchTest {
  @TempDir static Path workDir; // the checkpoint; removed after the class
  static Path model;
  static ServiceProcess decode, gateway;

  @BeforeAll
  static void startSingleProcessMesh() throws Exception {
    model = workDir.resolve("tiny");
    DemoCheckpoint.writeShipped("tiny", model, 11, DemoCheckpoint.Format.BF16, TokenizerFiles::write, (done, total) -> {});
    decode = ServiceProcess.start("decode-svc", "serve-decode",
        List.of("moemesh.engine.model-dir=" + model, "moemesh.engine.kv-cache-memory=16M", "moemesh.engine.threads=1"));
    gateway = ServiceProcess.start("gateway", "serve-gateway", List.of("moemesh.gateway.model-dir=" + model,
        "moemesh.gateway.disaggregation=false", "moemesh.gateway.decode.replicas=" + decode.grpcAddress()));
    for (ServiceProcess p : List.of(decode, gateway)) p.awaitReady(Duration.ofMinutes(3));
  }

  @AfterAll
  static void stop() throws Exception {
    for (ServiceProcess p : new ServiceProcess[] {gateway, decode}) if (p != null) p.close();
  }

  @Test
  void everyRequestHasExactlyTheTokensAskedForAndEveryFigureIsReported() throws Exception {
    Path json = model.resolveSibling("serve.json");
    BenchCommand.main(new String[] {"serve", "--url", "http://localhost:" + gateway.httpPort, "--concurrency", "3", "--num-prompts", "6",
        "--input-len", "40", "--output-len", "12", "--warmup", "1", "--tokenizer", model.toString(), "--json", json.toString()});

    JsonNode r = new ObjectMapper().readTree(Files.readString(json));
    assertThat(r.path("errors")).as(r.path("errors").toString()).isEmpty();
    assertThat(r.path("model_id").asText()).isEqualTo("tiny");
    assertThat(r.path("completed").asInt()).isEqualTo(6);
    assertThat(r.path("failed").asInt()).isZero();
    assertThat(r.path("total_input_tokens").asInt()).isEqualTo(6 * 40);
    assertThat(r.path("total_output_tokens").asInt()).isEqualTo(6 * 12);
    for (String figure : List.of("ttft", "tpot", "itl", "e2el")) {
      assertThat(r.path("mean_" + figure + "_ms").asDouble()).as(figure).isPositive();
      assertThat(r.path("p99_" + figure + "_ms").asDouble()).as(figure).isGreaterThanOrEqualTo(r.path("median_" + figure + "_ms").asDouble());
    }
    assertThat(r.path("median_e2el_ms").asDouble()).isGreaterThan(r.path("median_ttft_ms").asDouble());
    assertThat(r.path("output_throughput").asDouble()).isPositive();
  }
}
