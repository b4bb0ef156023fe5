package io.moemesh.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import org.junit.jupiter.api.Test;

/** bench profile's arithmetic on made-up requests: the step figures, the capacities, the options, the JSON. */
class ProfileStepsTest {
  /** A request of 100 prompt tokens: TTFT, then decode for the rest of its latency, with these gaps. */
  private static RequestResult request(double ttft, double latency, double... itl) {
    return new RequestResult(true, null, 100, itl.length + 1, ttft, java.util.Arrays.stream(itl).boxed().toList(), latency);
  }

  @Test
  void aStepsFiguresComeFromItsRequests() {
    // 4 requests in 2 s: 400 prompt tokens → 200/s; in decode 1.5 + 1.5 + 0.5 + 0.5 = 4 request-seconds → 2 at once
    var step = ProfileSteps.Step.of(2, List.of(request(0.1, 1.6, 0.01, 0.02), request(0.2, 1.7, 0.01), request(0.1, 0.6, 0.03),
        request(0.3, 0.8, 0.01), RequestResult.failed(100, "HTTP 503", 0.1)), 2.0);
    assertThat(step.completed()).isEqualTo(4);
    assertThat(step.failed()).isEqualTo(1);
    assertThat(step.promptTokensPerSecond()).isCloseTo(200, within(1e-9));
    assertThat(step.decodeConcurrency()).isCloseTo(2, within(1e-9));
    assertThat(step.meetsTtft(1)).as("a failed request misses the step").isFalse();
  }

  @Test
  void theCapacityIsTheBestFigureOfAStepThatMetTheTarget() {
    var steps = List.of(new ProfileSteps.Step(1, 4, 0, 0.05, 0.010, 900, 0.9), new ProfileSteps.Step(2, 8, 0, 0.08, 0.020, 1700, 1.9),
        new ProfileSteps.Step(4, 16, 0, 0.40, 0.045, 2900, 3.8), new ProfileSteps.Step(8, 32, 0, 0.90, 0.070, 3100, 7.5));
    var prefill = ProfileSteps.prefill(steps, 0.5);
    assertThat(prefill.perReplica()).isEqualTo(2900);
    assertThat(prefill.atConcurrency()).isEqualTo(4);
    assertThat(prefill.targetReached()).isTrue();
    var decode = ProfileSteps.decode(steps, 0.050);
    assertThat(decode.perReplica()).isEqualTo(3.8);
    assertThat(ProfileSteps.decode(steps, 0.1).targetReached()).as("every step met 100 ms: a lower bound").isFalse();
    assertThat(ProfileSteps.decode(steps, 0.005)).as("none met 5 ms").isNull();
  }

  @Test
  void writesThePlannersProfileFormat() throws Exception {
    var json = new ObjectMapper().readTree(ProfileBench.profileJson(2900.4, 500, 3.84, 50, "today"));
    assertThat(json.at("/prefill/tokensPerSecondPerReplica").asDouble()).isEqualTo(2900);
    assertThat(json.at("/prefill/ttftTargetMs").asDouble()).isEqualTo(500);
    assertThat(json.at("/decode/concurrencyPerReplica").asDouble()).isEqualTo(3.8);
    assertThat(json.at("/decode/itlTargetMs").asDouble()).isEqualTo(50);
    assertThat(json.get("measuredOn").asText()).isEqualTo("today");
  }

  @Test
  void optionsNeedTheUrlAndBothTargets() {
    var o = ProfileBench.Options.parse("--url", "http://localhost:8000", "--ttft-target", "500", "--itl-target", "50");
    assertThat(o.endpoint().toString()).isEqualTo("http://localhost:8000/v1/completions");
    assertThat(o.maxConcurrency()).isEqualTo(64);
    assertThatThrownBy(() -> ProfileBench.Options.parse("--url", "http://localhost:8000", "--ttft-target", "500"))
        .hasMessageContaining("--itl-target");
    assertThatThrownBy(() -> ProfileBench.Options.parse("--url", "u", "--ttft-target", "-1", "--itl-target", "5"))
        .hasMessage("--ttft-target must be > 0, got -1.0");
    assertThatThrownBy(() -> ProfileBench.Options.parse("--url", "u", "--ttft-target", "1", "--itl-target", "5", "--output-len", "1"))
        .hasMessageContaining("at least 2");
    assertThatThrownBy(() -> ProfileBench.Options.parse("--url")).hasMessage("Missing required parameter for option '--url' (URL)");
  }
}
