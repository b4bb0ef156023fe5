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
 * ({@code moemesh.*}) and OpenTelemetry variable a service reads has a row, and every row is a key some service reads.
 */
class ConfigurationDocTest {
  static final List<String> SERVICES = List.of("gateway", "prefill-svc", "decode-svc", "kv-store", "expert-svc", "planner");
  private static final Pattern ROW = Pattern.compile("(?m)^\\| `([a-z0-9.-]+)` \\|");

  @Test
  void everyKeyTheServicesReadIsDocumentedAndNothingElse() throws Exception {
    Set<String> documented = new LinkedHashSet<>();
    Matcher row = ROW.matcher(Files.readString(DeployManifestsTest.ROOT.resolve("docs/configuration.md")));
    while (row.find()) assertThat(documented.add(row.group(1))).as("one row per key: " + row.group(1)).isTrue();
    Set<String> read = new TreeSet<>();
    for (String service : SERVICES)
      for (String key : ConfigKeys.of(service)) if (key.startsWith("moemesh.") || key.startsWith("otel.")) read.add(key);
    assertThat(read).as("keys the services read that docs/configuration.md lacks").isSubsetOf(documented);
    assertThat(documented).as("keys docs/configuration.md lists that no service reads").isSubsetOf(read);
  }
}
