package io.moemesh.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code up}'s options as bin/lib/mesh.sh receives them: defaults, the ones that depend on others, usage errors. */
class UpCommandTest {
  static Map<String, String> up(String... args) {
    return Cli.parse(new UpCommand(), args).settings();
  }

  @Test
  void defaultsAreTheMeshOfTheReadme() {
    assertThat(up()).containsExactlyInAnyOrderEntriesOf(Map.ofEntries(
        Map.entry("model", ""), Map.entry("replicas", "2"), Map.entry("prefills", "1"), Map.entry("stores", "1"),
        Map.entry("port", "8000"), Map.entry("host", "127.0.0.1"), Map.entry("precision", "int8"), Map.entry("threads", ""),
        Map.entry("shards", "2"), Map.entry("shared", "remote"), Map.entry("redundant", "2"), Map.entry("balance", "60s"),
        Map.entry("speculative", "0"), Map.entry("draft_vocabulary", "0"), Map.entry("planner", "0"), Map.entry("ttft", "500"), Map.entry("itl", "50"),
        Map.entry("max_replicas", "2"), Map.entry("profile", ""), Map.entry("single", "0"), Map.entry("detach", "0")));
  }

  @Test
  void resolvesTheDefaultsThatDependOnOtherOptions() {
    assertThat(up("--planner")).containsEntry("replicas", "1").containsEntry("planner", "1");
    assertThat(up("--routed-shards", "0")).containsEntry("shared", "local");
    assertThat(up("--single", "--decode-replicas", "3", "--shared-experts", "REMOTE"))
        .containsEntry("replicas", "1").containsEntry("shards", "0").containsEntry("shared", "local").containsEntry("single", "1");
    assertThat(up("--precision", "BF16", "--threads", "3", "--model", "m", "--detach"))
        .containsEntry("precision", "bf16").containsEntry("threads", "3").containsEntry("model", "m").containsEntry("detach", "1");
    assertThat(up("--planner", "--profile", "p.json").get("profile")).isEqualTo(Path.of("p.json").toAbsolutePath().toString());
  }

  @Test
  void balanceEveryIsADurationInTheServicesSyntax() {
    assertThat(up("--balance-every", "500ms")).containsEntry("balance", "500ms");
    assertThat(up("--balance-every", "0")).containsEntry("balance", "0");
    assertThat(up("--balance-every", "90")).containsEntry("balance", "90s"); // a bare number is seconds
    assertThat(up("--balance-every", "2m")).containsEntry("balance", "120s");
    assertThatThrownBy(() -> up("--balance-every", "soon"))
        .hasMessage("Invalid value for option '--balance-every': must be a duration such as 60s, 500ms or 0, got 'soon'");
  }

  @Test
  void badValuesAndCombinationsAreUsageErrors() {
    assertThatThrownBy(() -> up("--prefill-replicas", "10")).hasMessage("--prefill-replicas must be 1 to 9, got 10");
    assertThatThrownBy(() -> up("--decode-replicas", "0")).hasMessage("--decode-replicas must be a positive number, got 0");
    assertThatThrownBy(() -> up("--port", "x")).hasMessage("Invalid value for option '--port': 'x' is not an int");
    assertThatThrownBy(() -> up("--shared-experts", "both")).hasMessageContaining("expected one of [LOCAL, REMOTE]");
    assertThatThrownBy(() -> up("--planner", "--single")).hasMessage("--planner sizes the prefill and decode stages; --single has neither");
    assertThatThrownBy(() -> up("--planner", "--decode-replicas", "3"))
        .hasMessage("--decode-replicas and --prefill-replicas (the planner's minimum) must not exceed --max-replicas 2");
    assertThatThrownBy(() -> up("--shared-experts", "remote", "--routed-shards", "0"))
        .hasMessage("--shared-experts remote needs --routed-shards ≥ 1");
    assertThatThrownBy(() -> up("--replicas", "2")).hasMessage("Unknown options: '--replicas', '2'");
  }

  @Test
  void shellWordsSurviveQuotes() {
    assertThat(UpCommand.shellQuoted("it's $HOME")).isEqualTo("'it'\\''s $HOME'");
  }
}
