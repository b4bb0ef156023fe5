package io.moemesh.planner.service;

import io.moemesh.planner.RecordedReplica;
import io.moemesh.planner.decide.Profile;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** One prefill and one decode replica serving recorded /q/metrics, a profile file, and the planner's config for them. */
public class RecordedMesh implements QuarkusTestResourceLifecycleManager {
  private RecordedReplica prefill;
  private RecordedReplica decode;
  private Path profile;

  @Override
  public Map<String, String> start() {
    try {
      prefill = new RecordedReplica().serve("prefill-t0.txt");
      decode = new RecordedReplica().serve("decode-t0.txt");
      profile = Files.createTempFile("planner-profile", ".json");
      Files.writeString(profile, new Profile(1000, 500, 8, 50, "test").toJson());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return Map.of("moemesh.planner.connector", "advisory", "moemesh.planner.interval", "200ms",
        "moemesh.planner.ttft-target", "500ms", "moemesh.planner.itl-target", "50ms",
        "moemesh.planner.profile", profile.toString(),
        "moemesh.planner.prefill-replicas", prefill.metricsUrl().toString(),
        "moemesh.planner.decode-replicas", decode.metricsUrl().toString());
  }

  @Override
  public void stop() {
    prefill.close();
    decode.close();
    try {
      Files.deleteIfExists(profile);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
