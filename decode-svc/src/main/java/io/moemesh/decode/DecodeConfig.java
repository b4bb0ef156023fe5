package io.moemesh.decode;

import io.moemesh.engine.KvHandoff;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/** decode-svc's own settings ({@code moemesh.decode.*}, listed in docs/configuration.md); the engine's are engine-host's. */
@ConfigMapping(prefix = "moemesh.decode")
public interface DecodeConfig {
  /**
   * The kv-stores a ticket may name (as the prefills list them); unset = any store a caller names (only callers with
   * the mesh's credentials can hand one over). Set, decode never dials an address a request chose.
   */
  Optional<List<String>> kvStores();

  /** What a request whose KV cannot be read does when it does not say: recompute its prompt here, or fail. */
  @WithDefault("recompute")
  KvHandoff.OnLoadFailure onLoadFailure();

  /** The lease a waiting request's object gets each time it is extended (every half of it); at most kv-store's max-lease. */
  @WithDefault("30s")
  Duration kvLeaseExtension();

  /** How long running streams may go on once a drain starts (SIGTERM, or a Drain call without a timeout). */
  @WithDefault("30s")
  Duration drainTimeout();
}
