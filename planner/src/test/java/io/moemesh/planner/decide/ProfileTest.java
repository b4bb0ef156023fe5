package io.moemesh.planner.decide;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ProfileTest {
  @Test
  void readsTheJsonItWrites() {
    var profile = new Profile(2400, 500, 16, 60, "2026-12-07, AMD Zen 3");
    assertThat(Profile.parse(profile.toJson())).isEqualTo(profile);
    assertThat(Profile.parse("""
        {"prefill": {"tokensPerSecondPerReplica": 2400, "ttftTargetMs": 500},
         "decode": {"concurrencyPerReplica": 16, "itlTargetMs": 60}}""").measuredOn()).isEmpty();
  }

  @Test
  void refusesMissingNonNumericOrNonPositiveFigures() {
    assertThatThrownBy(() -> Profile.parse("{\"prefill\": {}}")).hasMessage("profile needs a number at prefill.tokensPerSecondPerReplica");
    assertThatThrownBy(() -> Profile.parse("""
        {"prefill": {"tokensPerSecondPerReplica": "fast", "ttftTargetMs": 500}}""")).hasMessageContaining("prefill.tokensPerSecondPerReplica");
    assertThatThrownBy(() -> Profile.parse("""
        {"prefill": {"tokensPerSecondPerReplica": 1, "ttftTargetMs": 500},
         "decode": {"concurrencyPerReplica": 0, "itlTargetMs": 60}}""")).hasMessage("profile decode.concurrencyPerReplica must be > 0, not 0.0");
    assertThatThrownBy(() -> Profile.parse("[1]")).hasMessage("profile is not a JSON object");
    assertThatThrownBy(() -> Profile.parse("{")).hasMessageStartingWith("profile is not JSON");
  }
}
