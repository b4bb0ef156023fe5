package io.moemesh.e2e;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A service given a bad setting refuses to start, and says which setting and why: the real process, its exit and its
 * log (the settings are checked when the service boots, before it loads a model or opens a port to traffic).
 */
class BadConfigurationTest {
  static final Path MODEL = ServiceProcess.ROOT.resolve("models/demo").toAbsolutePath();

  @ParameterizedTest(name = "{0}: {1}={2}")
  @CsvSource(delimiter = '|', value = {
      "decode-svc | moemesh.engine.speculative-tokens | -1",
      "decode-svc | moemesh.engine.kv-cache-memory | lots",
      "prefill-svc | moemesh.engine.precision | fp4",
      "prefill-svc | moemesh.prefill.kv-lease | soon",
      "gateway | moemesh.gateway.max-in-flight | many",
      "gateway | moemesh.gateway.special-tokens-in-content | maybe",
      "kv-store | moemesh.kv-store.max-bytes | lots",
      "expert-svc | moemesh.expert.failover.misses | often"})
  void aServiceWithABadSettingExitsNamingIt(String module, String key, String value) throws Exception {
    List<String> properties = List.of("moemesh.engine.model-dir=" + MODEL, "moemesh.gateway.model-dir=" + MODEL,
        "moemesh.expert.model-dir=" + MODEL, key + "=" + value);
    try (ServiceProcess p = ServiceProcess.start(module, "bad-" + module + "-" + key.replace('.', '-'), properties)) {
      assertThatThrownBy(() -> p.awaitReady(Duration.ofSeconds(180))).as("%s with %s=%s", module, key, value)
          .hasMessageContaining("exited with").hasMessageContaining(key).hasMessageContaining(value);
    }
  }
}
