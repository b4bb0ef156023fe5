package io.moemesh.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * docs/configuration.md lists the configuration as the code reads it ({@link ConfigKeys}): every project key
 * ({@code moemesh.*}) and OpenTelemetry variable a service or the command line ({@code cli}) reads has a row, and every
 * row is a key one of them reads.
 */
class ConfigurationDocTest {
  static final List<String> READERS = List.of("gateway", "prefill-svc", "decode-svc", "kv-store", "expert-svc", "planner", "cli");
  private static final Pattern ROW = Pattern.compile("(?m)^\\| `([a-z0-9.-]+)` \\|");

  @Test
  void everyKeyTheServicesReadIsDocumentedAndNothingElse() throws Exception {
    Set<String> documented = new LinkedHashSet<>();
    Matcher row = ROW.matcher(Files.readString(K8sManifests.ROOT.resolve("docs/configuration.md")));
    while (row.find()) assertThat(documented.add(row.group(1))).as("one row per key: " + row.group(1)).isTrue();
    Set<String> read = new TreeSet<>();
    for (String reader : READERS)
      for (String key : ConfigKeys.of(reader)) if (key.startsWith("moemesh.") || key.startsWith("otel.")) read.add(key);
    assertThat(read).as("keys the services and the command line read that docs/configuration.md lacks").isSubsetOf(documented);
    assertThat(documented).as("keys docs/configuration.md lists that nothing reads").isSubsetOf(read);
  }

  /** The check above is not vacuous: a misspelt or a foreign key is no key of the service. */
  @Test
  void configKeysComeFromTheServicesCode() throws Exception {
    Set<String> decode = ConfigKeys.of("decode-svc"), gateway = ConfigKeys.of("gateway");
    assertThat(decode).contains("moemesh.engine.kv-cache-memory", "moemesh.experts.shared-address", "moemesh.decode.kv-stores",
        "moemesh.mesh.key-file", "otel.exporter.otlp.endpoint");
    assertThat(gateway).contains("moemesh.gateway.prefix-routing.block-tokens", "moemesh.gateway.api-keys")
        .doesNotContain("moemesh.engine.kv-cache-memory");
    assertThat(ConfigKeys.envName("moemesh.gateway.max-queue-wait")).isEqualTo("MOEMESH_GATEWAY_MAX_QUEUE_WAIT");
    assertThat(decode.stream().map(ConfigKeys::envName)).doesNotContain("MOEMESH_ENGINE_KV_CACHE_MEMRY", "MOEMESH_GATEWAY_API_KEYS");
  }
}
